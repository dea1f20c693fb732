// A three-member Debian etcd 3.4 cluster losing each member in turn (current/cluster.test.ts: 3.6).
import { etcdClusterSuite } from './suites/cluster.js';

etcdClusterSuite('debian');
