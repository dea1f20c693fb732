/**
 * zk://host:port[,host:port…][/PATH][?timeout=…] (see parseZkUrl). `open` connects one session
 * (within the call timeout) so an unreachable ensemble shows up at once as StoreUnavailableError.
 */
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { parseZkUrl, type ZkConfig } from './config.js';

/** zooKeeperStore is the descriptor of the ZooKeeper store. */
export const zooKeeperStore: StoreDescriptor<ZkConfig> = {
  name: 'zookeeper',
  schemes: ['zk'],
  crossProcess: true,
  parse(text) {
    return parseZkUrl(text.trim());
  },
  async open(config) {
    const { ZooKeeperStore } = await import('./index.js');
    const store = new ZooKeeperStore({ config });
    try {
      await store.verify();
      return store;
    } catch (err) {
      await store.close();
      throw err;
    }
  },
};
