#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs the servers the tests start (PostgreSQL,
# Redis, etcd, faketime, Chromium from Debian), the npm dependencies, then runs `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-servers.sh
npm ci --no-audit --no-fund
npm test
