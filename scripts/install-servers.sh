#!/usr/bin/env bash
# Installs what baton's tests, chaos runs and benchmarks need from Debian's packages.
# Idempotent: packages already present are left alone. Needs root (or sudo).
set -euo pipefail
# openjdk-17-jdk-headless: javac compiles the Curator LeaderLatch peer of the ZooKeeper interop test.
# galera-4 + rsync: the wsrep provider and the state-transfer (SST) method of the three-node
# MariaDB Galera cluster the MySQL store is tested on (infra/servers/galera.ts).
# python3: `baton run --progress-timeout` serves NOTIFY_SOCKET through it (docs/watchdog.md), and
# the hung-work tests' children are python3 programs that speak sd_notify.
packages=(python3 postgresql redis-server etcd-server etcd-client nats-server mariadb-server galera-4 rsync faketime chromium zookeeper libcurator-framework-java libcurator-recipes-java python3-kazoo openjdk-17-jdk-headless)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-servers: all present (${packages[*]})"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-servers: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
