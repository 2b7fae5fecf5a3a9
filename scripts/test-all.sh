#!/bin/sh
# `npm test`: every check CI runs, in order. Started through scripts/with-node24.sh, so Node 24 and
# the dependencies are in place. Tests start what they need (embedded PostgreSQL, git server, ...).
set -eu
cd "$(dirname "$0")/.."
echo "== system packages"
sh scripts/ensure-system-packages.sh
echo "== typecheck (every workspace, then scripts/, bench/ and the root's own files)"
turbo run typecheck --output-logs=errors-only
tsc --noEmit -p scripts
tsc --noEmit -p bench
tsc --noEmit -p .
sh scripts/lint.sh
echo "== web build (the e2e tests run the production server)"
if tsx -e 'import { webBuildIsStale } from "@kiln/testkit/web-build"; process.exit(webBuildIsStale(process.cwd()) ? 0 : 1)'; then
  (cd apps/web && next build)
fi
echo "== tests"
results=".vitest-results.json"
rm -f "$results"
status=0
vitest run --reporter=default --reporter=./scripts/test-verdict/slowest-files-reporter.ts --reporter=json --outputFile.json="$results" "$@" || status=$?
# The verdict comes from the results file as well as the exit code; it also prints the ten slowest
# files (scripts/test-verdict/verdict.ts says why).
tsx scripts/test-verdict/verdict.ts "$results" || status=1
exit "$status"
