#!/bin/sh
# packages/domain is pure (conventions rule 1): no I/O, no env, no clock, no randomness, no
# framework imports. Prose rules drift; this check fails the build instead.
set -eu
cd "$(dirname "$0")/.."
bad=$(grep -rnE "from ['\"](node:|@prisma|@kiln/db|@kiln/engine|next|@trpc|pg-boss|pg['\"]|ioredis|@aws-sdk)|process\.env|Date\.now\(|new Date\(\)|Math\.random\(" packages/domain/src --include='*.ts' | grep -v '\.test\.ts:' || true)
if [ -n "$bad" ]; then
  echo "packages/domain must stay pure; offending lines:" >&2
  echo "$bad" >&2
  exit 1
fi
# No package imports an app.
bad=$(grep -rnE "from ['\"]@kiln/(web|workers|host-agent)" packages --include='*.ts' || true)
if [ -n "$bad" ]; then
  echo "packages must not import apps:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "layering ok"
