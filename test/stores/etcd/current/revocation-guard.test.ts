// The revocation guard on the current etcd line (3.6).
import { etcdRevocationGuardSuite } from '../suites/revocation-guard.js';

etcdRevocationGuardSuite('current');
