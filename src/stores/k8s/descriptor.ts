/**
 * k8s://NAMESPACE[?timeout=…&watchTimeout=…] — Leases in one namespace of the cluster found by
 * the standard resolution (in-cluster service account, else $KUBECONFIG, else ~/.kube/config).
 * Opening checks that Leases can be read there, or throws.
 */
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { parseSingleUrl } from '../kit/url.js';
import { parseK8sUrl } from './config.js';

/** k8sStore is the descriptor of the Kubernetes Lease store. */
export const k8sStore: StoreDescriptor<URL> = {
  name: 'k8s',
  schemes: ['k8s'],
  crossProcess: true,
  parse(text) {
    const url = parseSingleUrl('k8s', text);
    parseK8sUrl(url);
    return url;
  },
  async open(url, options) {
    const { K8sStore } = await import('./index.js');
    const store = new K8sStore({ url, env: options.env });
    try {
      return await store.verify();
    } catch (err) {
      await store.close();
      throw err;
    }
  },
};
