// The deposed-leader keepalive rule on the current etcd line (3.6): its answers carry the raft
// term the rule reads, and a lowered one is refused.
import { etcdDeposedSuite } from '../suites/deposed.js';

await etcdDeposedSuite('current');
