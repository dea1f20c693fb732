#!/usr/bin/env bash
# Builds helm from the Go module proxy (helm.sh/helm/v3, cmd/helm, HELM_VERSION) into a cache
# outside the repository (default ~/.cache/baton/helm-<version>/bin/helm), for the chart's tests
# (test/chart): `helm lint` and `helm template`. About 3 minutes on a new 2-core machine.
# Idempotent: prints the binary's path and exits at once when it is already there.
set -euo pipefail
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
cache="${BATON_HELM_CACHE:-${HOME:-/tmp}/.cache/baton/helm-$HELM_VERSION}"
bin="$cache/bin/helm"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null || { echo "build.sh: go not found (the chart's tests need Go to build helm)" >&2; exit 69; }
mkdir -p "$cache/bin" "$cache/src"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
start=$(date +%s)
(cd "$cache/src"
  [ -f go.mod ] || go mod init baton.local/helm-build >/dev/null 2>&1
  go mod edit -require="helm.sh/helm/v3@$HELM_VERSION"
  # helm's own go.mod pins what it was released with: take its requirements as they are.
  go mod download -json "helm.sh/helm/v3@$HELM_VERSION" >/dev/null
  go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" -o "$bin.tmp" helm.sh/helm/v3/cmd/helm)
mv "$bin.tmp" "$bin"
echo "build.sh: built helm $HELM_VERSION in $(( $(date +%s) - start )) s into $bin" >&2
echo "$bin"
