// The conformance suite on the current etcd line (3.6, built by infra/kube/build.sh).
import { etcdConformance } from '../suites/conformance.js';

await etcdConformance('current');
