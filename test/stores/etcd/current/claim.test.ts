// The write-free claim on the current etcd line (3.6).
import { etcdClaimSuite } from '../suites/claim.js';

await etcdClaimSuite('current');
