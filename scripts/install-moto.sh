#!/usr/bin/env bash
# Installs moto (an independent implementation of the AWS APIs, Apache-2.0) in server mode into its
# own virtual environment outside the repository, for the tests that run baton's AWS helpers and
# DynamoDB store against it (infra/servers/moto.ts). Idempotent: a complete environment of the
# pinned version is left alone. Called by scripts/install-servers.sh.
#
#   BATON_MOTO_VERSION   the pinned version (default below; infra/servers/moto.ts reads the same)
#   BATON_CACHE          where it goes (default ~/.cache/baton): $BATON_CACHE/moto-<version>/
set -euo pipefail
version="${BATON_MOTO_VERSION:-5.2.5}"
cache="${BATON_CACHE:-${HOME:-/tmp}/.cache/baton}"
venv="$cache/moto-$version"
# The marker is written last, so a half-finished install (interrupted pip) is redone.
if [ -f "$venv/.complete" ] && [ -x "$venv/bin/moto_server" ]; then
  echo "install-moto: moto $version present ($venv)"
  exit 0
fi
# Debian's python3 needs python3-venv for `-m venv` (ensurepip); install-servers.sh lists it.
python=/usr/bin/python3
[ -x "$python" ] || python="$(command -v python3)"
echo "install-moto: installing moto[server]==$version into $venv"
rm -rf "$venv"
mkdir -p "$cache"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$version"
"$venv/bin/moto_server" --help >/dev/null
touch "$venv/.complete"
echo "install-moto: moto $version ready"
