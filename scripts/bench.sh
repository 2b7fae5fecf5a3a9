#!/bin/sh
# `npm run bench -- <name>` runs bench/<name>/run.ts (after making sure the web build is current).
set -eu
cd "$(dirname "$0")/.."
name="${1:-control-plane}"
shift || true
# In-process benches start no web server: no build for them.
case "$name" in
  org-throughput) ;;
  *)
    if tsx -e 'import { webBuildIsStale } from "@kiln/testkit/web-build"; process.exit(webBuildIsStale(process.cwd()) ? 0 : 1)'; then
      (cd apps/web && next build)
    fi
    ;;
esac
exec tsx "bench/$name/run.ts" "$@"
