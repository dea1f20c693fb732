// The revocation guard on Debian's etcd 3.4 (current/revocation-guard.test.ts: the same on etcd 3.6).
import { etcdRevocationGuardSuite } from './suites/revocation-guard.js';

etcdRevocationGuardSuite('debian');
