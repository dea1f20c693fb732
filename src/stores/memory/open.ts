import type { StoreOpenOptions } from '../../core/store-url.js';
import { MemoryStore } from './index.js';

/** open handles `memory:` (the process-wide store) and `memory:NAME`. */
export async function open(url: URL, _options: StoreOpenOptions): Promise<MemoryStore> {
  return MemoryStore.shared(decodeURIComponent(url.pathname));
}
