/**
 * StoreDescriptor is how a store plugs into baton: its name, the URL schemes it answers, a pure
 * check of its URL, and `open`. Each store folder exports one (`src/stores/<name>/descriptor.ts`);
 * the registry (src/stores/registry.ts) lists the built-in ones, and `registerStore` takes a
 * store written outside this package in the same shape.
 *
 * The descriptor module must stay light: it imports no store SDK. `open` loads the store's
 * implementation (and so its SDK) only when that store is used.
 */
import type { LeaseStore } from './store.js';

/** StoreOpenOptions are passed to a descriptor's `parse` and `open`. */
export interface StoreOpenOptions {
  /** Environment for defaults (BATON_*, AWS_*, KUBECONFIG…); process.env by default. */
  env?: NodeJS.ProcessEnv;
}

/** StoreDescriptor describes one kind of store (see the file comment). */
export interface StoreDescriptor<Config = unknown> {
  /** Short name, e.g. "redis"; also the store's `kind`. */
  readonly name: string;
  /** URL schemes without the colon, lower case, e.g. ['redis', 'rediss']. */
  readonly schemes: readonly string[];
  /**
   * Whether separate processes can share this store. `memory:` cannot: the CLI refuses it,
   * since each `baton` process would see its own private store.
   */
  readonly crossProcess: boolean;
  /**
   * parse checks the URL text as given (scheme included) and returns what `open` needs. It is
   * pure: no I/O, no file or directory created. Throws InvalidConfigError with a one-line
   * reason naming the bad part.
   */
  parse(text: string, options: StoreOpenOptions): Config;
  /** open connects (or opens the file) and returns the store; unreachable → StoreUnavailableError. */
  open(config: Config, options: StoreOpenOptions): Promise<LeaseStore>;
}
