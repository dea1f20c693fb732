// The conformance suite on Debian's etcd 3.4; current/conformance.test.ts runs it on etcd 3.6.
import { etcdConformance } from './suites/conformance.js';

await etcdConformance('debian');
