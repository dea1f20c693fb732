// A three-member etcd 3.6 cluster losing each member in turn.
import { etcdClusterSuite } from '../suites/cluster.js';

etcdClusterSuite('current');
