/** memory: and memory:NAME — a store inside this process (library use and tests only). */
import type { StoreDescriptor } from '../../core/store-descriptor.js';

/** memoryStore is the descriptor of the in-process store; `crossProcess` is false. */
export const memoryStore: StoreDescriptor<string> = {
  name: 'memory',
  schemes: ['memory'],
  crossProcess: false,
  parse: (text) => decodeURIComponent(text.trim().replace(/^memory:/i, '')),
  async open(name) {
    const { MemoryStore } = await import('./index.js');
    return MemoryStore.shared(name);
  },
};
