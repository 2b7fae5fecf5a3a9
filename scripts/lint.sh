#!/bin/sh
# Static checks, in `npm test` before the suites (and alone as `npm run lint`): one formatter, type-aware
# lint, the dependency rules of conventions.md, and unused files, exports and dependencies.
set -eu
cd "$(dirname "$0")/.."
echo "== format (biome)"
biome format .
echo "== lint (typescript-eslint, type-aware)"
eslint --max-warnings 0 .
echo "== dependency rules (dependency-cruiser, .dependency-cruiser.cjs)"
depcruise apps packages e2e scripts bench test --config .dependency-cruiser.cjs --output-type err
echo "== unused files, exports and dependencies (knip)"
knip --no-progress
echo "lint ok"
