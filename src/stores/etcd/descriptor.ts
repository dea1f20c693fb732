/**
 * etcd://host:port[,host:port…][?prefix=…&ledgerPrefix=…&timeout=…&endpoints=…] (see
 * parseEtcdUrl). Nothing is sent until the first call: an unreachable server shows up as
 * StoreUnavailableError then.
 */
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { parseEtcdUrl } from './config.js';

/** etcdStore is the descriptor of the etcd store. */
export const etcdStore: StoreDescriptor<string> = {
  name: 'etcd',
  schemes: ['etcd'],
  crossProcess: true,
  parse(text) {
    parseEtcdUrl(text.trim());
    return text.trim();
  },
  async open(text) {
    const { EtcdStore } = await import('./index.js');
    return EtcdStore.fromUrl(text);
  },
};
