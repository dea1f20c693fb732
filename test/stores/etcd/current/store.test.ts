// etcd's election protocol and interop with the `etcdctl elect` of the current etcd line (3.6).
import { etcdProtocolSuite } from '../suites/protocol.js';

await etcdProtocolSuite('current');
