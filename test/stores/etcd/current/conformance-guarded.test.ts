// The conformance suite on the current etcd line with the revocation guard on, as on a cluster
// (a single member keeps it off by itself; the guard's own tests: revocation-guard.test.ts).
import { etcdConformance } from '../suites/conformance.js';

await etcdConformance('current', { revocationGuard: 'on' });
