/** redis://… and rediss://… — connects, checks the server's settings, or throws. */
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { parseSingleUrl } from '../kit/url.js';
import { parseRedisUrl } from './options.js';

/** redisStore is the descriptor of the Redis store. */
export const redisStore: StoreDescriptor<URL> = {
  name: 'redis',
  schemes: ['redis', 'rediss'],
  crossProcess: true,
  parse(text) {
    const url = parseSingleUrl('redis', text);
    parseRedisUrl(url);
    return url;
  },
  async open(url) {
    const { RedisStore } = await import('./index.js');
    const store = new RedisStore({ url });
    try {
      return await store.verify();
    } catch (err) {
      await store.close();
      throw err;
    }
  },
};
