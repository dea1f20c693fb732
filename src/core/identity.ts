import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { HolderMetadata } from './store.js';

const require = createRequire(import.meta.url);

/** BATON_VERSION is this package's version, recorded in every lease this process holds. */
export const BATON_VERSION: string = (() => {
  try {
    return (require('../../package.json') as { version: string }).version;
  } catch {
    return '0.0.0';
  }
})();

/** defaultIdentity is `<hostname>-<pid>-<6 hex>`: unique per candidate even across restarts. */
export function defaultIdentity(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/** processMetadata describes this process for the lease record. */
export function processMetadata(extra: HolderMetadata = {}): HolderMetadata {
  return { hostname: hostname(), pid: process.pid, version: BATON_VERSION, ...extra };
}
