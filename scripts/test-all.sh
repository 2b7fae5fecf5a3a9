#!/bin/sh
# `npm test`: every check CI runs, in order. Started through scripts/with-node24.sh, so Node 24 and
# the dependencies are in place. Tests start what they need (embedded PostgreSQL, git server, ...).
set -eu
cd "$(dirname "$0")/.."
echo "== typecheck"
turbo run typecheck --output-logs=errors-only
echo "== layering (packages/domain stays pure)"
sh scripts/check-layering.sh
echo "== web build (the e2e tests run the production server)"
if tsx -e 'import { webBuildIsStale } from "./scripts/lib/web-build.ts"; process.exit(webBuildIsStale(process.cwd()) ? 0 : 1)'; then
  (cd apps/web && next build)
fi
echo "== tests"
vitest run "$@"
