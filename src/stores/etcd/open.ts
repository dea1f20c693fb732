import type { StoreOpenOptions } from '../../core/store-url.js';
import { EtcdStore } from './index.js';

/**
 * open handles `etcd://host:port[,host:port…][?prefix=…&ledgerPrefix=…&timeout=…&endpoints=…]`
 * (see parseEtcdUrl). Nothing is sent until the first call: an unreachable server shows up as
 * StoreUnavailableError then.
 */
export async function open(url: URL | string, _options: StoreOpenOptions = {}): Promise<EtcdStore> {
  return EtcdStore.fromUrl(url);
}
