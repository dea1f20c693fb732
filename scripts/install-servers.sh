#!/usr/bin/env bash
# Installs what baton's tests, chaos runs and benchmarks need from Debian's packages, and moto
# from PyPI (scripts/install-moto.sh).
# Idempotent: packages already present are left alone. Needs root (or sudo).
set -euo pipefail
# openjdk-17-jdk-headless: javac compiles the Curator LeaderLatch peer of the ZooKeeper interop test.
# python3-venv: the virtual environment moto (scripts/install-moto.sh) is installed into.
# galera-4 + rsync: the wsrep provider and the state-transfer (SST) method of the three-node
# MariaDB Galera cluster the MySQL store is tested on (infra/servers/galera.ts).
# iproute2 + iptables: chaos --net netns puts every process on a host of its own (infra/netns.ts).
# python3: `baton run --progress-timeout` serves NOTIFY_SOCKET through it (docs/watchdog.md), and
# the hung-work tests' children are python3 programs that speak sd_notify.
# buildah, mmdebstrap, podman, runc: image/build.sh assembles baton's OCI image from a Debian root
# (mmdebstrap) with buildah; test/image runs it with podman on runc (crun refuses a hybrid cgroup host).
packages=(python3 iproute2 iptables postgresql redis-server etcd-server etcd-client nats-server mariadb-server galera-4 rsync faketime chromium zookeeper libcurator-framework-java libcurator-recipes-java python3-kazoo openjdk-17-jdk-headless python3-venv buildah mmdebstrap podman runc)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-servers: all present (${packages[*]})"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-servers: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# moto (from PyPI, into its own virtual environment under ~/.cache/baton; a no-op once there).
bash "$(dirname "$0")/install-moto.sh"
