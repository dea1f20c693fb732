#!/usr/bin/env bash
# Builds the real Kubernetes and etcd binaries the k8s store's tests run against, from the Go
# module proxy, into a cache outside the repository (default ~/.cache/baton/kube-<versions>/bin):
#
#   kube-apiserver, kubectl   from k8s.io/kubernetes (cmd/…), KUBE_VERSION
#   etcd, etcdctl             from go.etcd.io/etcd/server/v3 and etcdctl/v3, ETCD_VERSION
#   leader-elector            test/stores/k8s/client-go-elector: client-go's own leaderelection
#
# Outside its repository, k8s.io/kubernetes can only be consumed by replacing every staging
# module its go.mod points at ./staging/src/… with the published v0.<minor>.<patch> of the same
# release; the replace lines are generated from that go.mod, never written by hand.
# Idempotent: prints the bin folder and exits at once when every binary is already there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"     # go 1.26.0: the newest line this machine's Go 1.26 builds without a toolchain download
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
cache="${BATON_KUBE_CACHE:-${HOME:-/tmp}/.cache/baton/kube-$KUBE_VERSION-etcd-$ETCD_VERSION}"
bin="$cache/bin"
want=(kube-apiserver kubectl etcd etcdctl leader-elector)
stamp="$(cat "$repo/test/stores/k8s/client-go-elector/main.go" "$here/build.sh" | sha256sum | cut -c1-16)"
done=1
for b in "${want[@]}"; do [ -x "$bin/$b" ] || done=0; done
[ -f "$bin/.stamp" ] && [ "$(cat "$bin/.stamp")" = "$stamp" ] || done=0
if [ "$done" = 1 ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null || { echo "build.sh: go not found (the Kubernetes tests need Go 1.26+)" >&2; exit 69; }
mkdir -p "$bin" "$cache/src"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
start=$(date +%s)

# 1. kube-apiserver and kubectl
k="$cache/src/kube"
mkdir -p "$k"
if [ ! -x "$bin/kube-apiserver" ] || [ ! -x "$bin/kubectl" ]; then
  (cd "$k"
    [ -f go.mod ] || go mod init baton.local/kube-build >/dev/null 2>&1
    go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" >/dev/null
    kmod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$KUBE_VERSION.mod"
    staging="v0.${KUBE_VERSION#v1.}"
    go mod edit -require="k8s.io/kubernetes@$KUBE_VERSION"
    # every "k8s.io/X => ./staging/src/k8s.io/X" becomes "k8s.io/X => k8s.io/X v0.<minor>.<patch>"
    sed -nE 's#^[[:space:]]*(k8s\.io/[a-z0-9-]+) => \./staging/src/.*#\1#p' "$kmod" | while read -r m; do
      go mod edit -replace="$m=$m@$staging"
    done
    go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION" \
      -o "$bin/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl)
fi

# 2. etcd and etcdctl, current line
e="$cache/src/etcd"
mkdir -p "$e"
if [ ! -x "$bin/etcd" ] || [ ! -x "$bin/etcdctl" ]; then
  (cd "$e"
    [ -f go.mod ] || go mod init baton.local/etcd-build >/dev/null 2>&1
    go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" -require="go.etcd.io/etcd/etcdctl/v3@$ETCD_VERSION"
    go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3
    go build -trimpath -ldflags "-s -w" -o "$bin/etcdctl" go.etcd.io/etcd/etcdctl/v3)
fi

# 3. the client-go elector (its own go.mod pins client-go)
(cd "$repo/test/stores/k8s/client-go-elector" && go build -trimpath -o "$bin/leader-elector" .)

echo "$stamp" > "$bin/.stamp"
echo "build.sh: built in $(( $(date +%s) - start )) s into $bin" >&2
echo "$bin"
