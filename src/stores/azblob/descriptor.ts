/** azblob://CONTAINER and azblob://ACCOUNT/CONTAINER — Azure Blob Storage, one blob per lock under a blob lease. */
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { parseAzblobUrl, type AzblobConfig } from './config.js';

/** azblobStore is the descriptor of the Azure Blob store; the SDK loads only in `open`. */
export const azblobStore: StoreDescriptor<AzblobConfig> = {
  name: 'azblob',
  schemes: ['azblob'],
  crossProcess: true,
  parse: (text, { env }) => parseAzblobUrl(text, env ?? process.env),
  async open(config) {
    const { AzblobStore } = await import('./store.js');
    return AzblobStore.open(config);
  },
};
