// The public conformance suite on the in-process memory store; the only fault it can have is an
// operator deleting a record (its backend keeps the term counter).
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { MemoryStore } from '../../../src/stores/memory/index.js';

const backend = new MemoryStore().backend;
await storeConformanceSuite({
  name: 'memory',
  makeStore: async () => new MemoryStore(backend),
  faults: { deleteRecord: async (lock) => backend.delete(lock) },
});
