// The deposed-leader keepalive rule on Debian's etcd 3.4 (current/deposed.test.ts: on etcd 3.6).
import { etcdDeposedSuite } from './suites/deposed.js';

await etcdDeposedSuite('debian');
