/**
 * The store kit, public as `baton/kit`: what a store author outside this package builds on.
 * A compare-and-set store implements `CasBackend` and gets a whole LeaseStore from
 * `new CasStore(backend)`; the helpers turn SDK failures into one-line StoreUnavailableErrors,
 * bound calls by a timeout, refuse calls after close and fan out watch notifications.
 */
export { CasStore, type CasStoreOptions } from './cas-store.js';
export { leaseKey, termKey, ledgerKey, type CasBackend, type BackendItem, type ReplaceItem } from './backend.js';
export { unavailable, translated, oneLine } from './errors.js';
export { withTimeout } from './timeout.js';
export { ClosedGuard } from './guard.js';
export { ListenerRegistry, type Subscribe } from './listeners.js';
export { redactUrl, checkQueryOptions, parseMultiHostUrl, parseSingleUrl, type HostPort, type MultiHostUrl } from './url.js';
