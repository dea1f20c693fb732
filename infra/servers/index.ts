/**
 * The server table: every real server that tests, chaos runs and benchmarks start, each from its
 * Debian (or npm) binary on a free loopback port with its own data directory. Adding a store's
 * server is one file here and one export line below.
 */
export { ManagedServer, freePort, waitForPort, requireBinary, writeConfig } from './base.js';
export { PostgresServer } from './postgres.js';
export { RedisServer } from './redis.js';
export { EtcdServer, etcdBinary, etcdCluster, etcdLine, etcdRaftLeader, type EtcdLine } from './etcd.js';
export { AzuriteServer, AZURITE_ACCOUNT, AZURITE_KEY } from './azurite.js';
export { NatsServer } from './nats.js';
export { MariaDBServer } from './mariadb.js';
export { GaleraNode, GALERA_SUSPECT_TIMEOUT_MS, galeraCluster, type GaleraCluster } from './galera.js';
export { DynaliteServer } from './dynalite.js';
export { MotoServer, MOTO_VERSION, motoServerBin } from './moto.js';
export { ZooKeeperServer, zooKeeperEnsemble, fourLetter } from './zookeeper.js';
export { K8sFakeServer } from './k8s-fake.js';
export { KubeApiServer, type KubeTestUser } from './kube-apiserver.js';
