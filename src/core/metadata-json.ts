import type { HolderMetadata } from './store.js';

const cache = new WeakMap<object, string>();

/**
 * metadataJson serialises holder metadata, once per frozen object. A leader renews with the same
 * frozen metadata every time (the elector's own, which stores pass through to the records they
 * return), so at thousands of leases the cache saves a JSON.stringify per renewal. A mutable
 * object is serialised every time, as it may have changed since.
 */
export function metadataJson(metadata: HolderMetadata | undefined): string {
  if (!metadata) return '{}';
  if (!Object.isFrozen(metadata)) return JSON.stringify(metadata);
  let json = cache.get(metadata);
  if (json === undefined) cache.set(metadata, (json = JSON.stringify(metadata)));
  return json;
}
