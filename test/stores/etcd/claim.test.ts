// The write-free claim on Debian's etcd 3.4 (current/claim.test.ts: the same on etcd 3.6).
import { etcdClaimSuite } from './suites/claim.js';

await etcdClaimSuite('debian');
