/** Test helpers for baton and for stores written outside it. */
export { FakeClock, settle } from './fake-clock.js';
export { storeConformanceSuite, type ConformanceOptions } from './conformance/index.js';
