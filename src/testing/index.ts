/** Test helpers for baton and for stores written outside it. */
export { FakeClock, settle } from './fake-clock.js';
export {
  storeConformanceSuite,
  resolveCapabilities,
  recordTests,
  queueTests,
  fencingTests,
  notifyTests,
  ledgerTests,
  presenceTests,
  electionTests,
  lifecycleTests,
  faultTests,
  renewRevisionsTests,
  handoverTests,
  rollingTests,
  type ConformanceOptions,
  type StoreFaults,
} from './conformance/index.js';
export { Candidates, recordEscapes, faultTiming, STEP_DOWN_SLACK_MS, type FaultTiming, type Transition } from './conformance/candidates.js';
export { uniqueLock, waitFor, acquireWrite, keepWrite, type TestRunner, type TestContextLike, type TestFn } from './conformance/context.js';
