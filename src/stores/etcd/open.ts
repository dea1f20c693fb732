import type { StoreOpenOptions } from '../../core/store-url.js';
import { EtcdStore } from './index.js';

/**
 * open handles `etcd://host:port[,host:port…][?prefix=…&ledgerPrefix=…&timeout=…&endpoints=…]`
 * (see parseEtcdUrl). Nothing is sent until the first call: an unreachable server shows up as
 * StoreUnavailableError then.
 */
export async function open(url: URL | string, options: StoreOpenOptions = {}): Promise<EtcdStore> {
  return EtcdStore.fromUrl(options.text ?? url);
}
