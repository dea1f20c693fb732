/** memory: and memory:NAME — a store inside this process (library use and tests only). */
import { InvalidConfigError } from '../../core/errors.js';
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { checkQueryOptions } from '../kit/url.js';

/** memoryStore is the descriptor of the in-process store; `crossProcess` is false. */
export const memoryStore: StoreDescriptor<string> = {
  name: 'memory',
  schemes: ['memory'],
  crossProcess: false,
  parse(text) {
    const rest = text.trim().replace(/^memory:/i, '');
    const q = rest.indexOf('?');
    // memory: takes no options: refuse any rather than ignore it.
    if (q >= 0) checkQueryOptions('memory', new URLSearchParams(rest.slice(q + 1)), []);
    try {
      return decodeURIComponent(q >= 0 ? rest.slice(0, q) : rest);
    } catch {
      throw new InvalidConfigError(`memory: "${rest}" has a broken %-escape`);
    }
  },
  async open(name) {
    const { MemoryStore } = await import('./index.js');
    return MemoryStore.shared(name);
  },
};
