import { storeConformanceSuite } from '../../src/testing/index.js';
import { MemoryStore } from '../../src/stores/memory/index.js';

const backend = new MemoryStore().backend;
await storeConformanceSuite({ name: 'memory', makeStore: async () => new MemoryStore(backend) });
