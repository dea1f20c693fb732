// etcd's election protocol and `etcdctl elect` interop on Debian's etcd 3.4 (the same suite runs
// on etcd 3.6 from current/store.test.ts).
import { etcdProtocolSuite } from './suites/protocol.js';

await etcdProtocolSuite('debian');
