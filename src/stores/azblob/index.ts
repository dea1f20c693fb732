/** The Azure Blob Storage lease store (see store.ts for the layout and the safety argument). */
export { AzblobStore, type AzblobOptions } from './store.js';
export { parseAzblobUrl, type AzblobConfig } from './config.js';
export { blobLeaseSeconds } from './lease.js';
