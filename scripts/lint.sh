#!/bin/sh
# Static checks, in `npm test` before the suites (and alone as `npm run lint`): one formatter, type-aware
# lint, the dependency rules of conventions.md, and unused files, exports and dependencies.
set -eu
cd "$(dirname "$0")/.."
echo "== format (biome)"
biome format .
echo "== lint (typescript-eslint, type-aware)"
# Type-aware lint holds one TypeScript program per tsconfig (14 of them) in memory at once: past
# node's default heap (about 4 GiB here) it dies half-way, so it gets more (the machine has 24 GiB).
NODE_OPTIONS="${NODE_OPTIONS:-} --max-old-space-size=8192" eslint --max-warnings 0 .
echo "== dependency rules (dependency-cruiser, .dependency-cruiser.cjs)"
depcruise apps packages e2e scripts bench test --config .dependency-cruiser.cjs --output-type err
echo "== unused files, exports and dependencies (knip)"
knip --no-progress
echo "lint ok"
