import type { StoreOpenOptions } from '../../core/store-url.js';
import { RedisStore } from './index.js';

/** open handles `redis://…` and `rediss://…`: connects, checks the server's settings, or throws. */
export async function open(url: URL, _options: StoreOpenOptions): Promise<RedisStore> {
  const store = new RedisStore({ url });
  try {
    return await store.verify();
  } catch (err) {
    await store.close();
    throw err;
  }
}
