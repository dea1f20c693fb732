import type { StoreOpenOptions } from '../../core/store-url.js';
import { K8sStore } from './index.js';

/**
 * open handles `k8s://NAMESPACE?…` URLs: resolves the server and credentials (service account,
 * $KUBECONFIG, ~/.kube/config), checks that Leases can be read there, or throws.
 */
export async function open(url: URL, options: StoreOpenOptions): Promise<K8sStore> {
  const store = new K8sStore({ url, env: options.env });
  try {
    return await store.verify();
  } catch (err) {
    await store.close();
    throw err;
  }
}
