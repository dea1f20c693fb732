/**
 * The slice of node-zookeeper-client (1.1.x, pure JavaScript, no types of its own) that the store
 * uses, typed here so no SDK type leaks into baton's public types, and its lazy loader.
 */
import { InvalidConfigError } from '../../core/errors.js';

/** ZkStat is a znode's stat, as node-zookeeper-client returns it (zxids as 8-byte buffers). */
export interface ZkStat {
  readonly czxid: Buffer;
  readonly mzxid: Buffer;
  readonly version: number;
  readonly ephemeralOwner: Buffer;
  readonly numChildren: number;
}

type Cb<T> = (err: unknown, value?: T) => void;

/** ZkTransaction is a multi: ops run all or none. */
export interface ZkTransaction {
  create(path: string, data: Buffer | null, acls: unknown[], mode: number): ZkTransaction;
  setData(path: string, data: Buffer | null, version: number): ZkTransaction;
  remove(path: string, version: number): ZkTransaction;
  check(path: string, version: number): ZkTransaction;
  commit(cb: (err: unknown, results?: { type: number; path?: string; stat?: ZkStat; err?: number }[]) => void): void;
  /** The ops list; read to fix versions the SDK rewrites (see fixVersion). */
  readonly ops: { version?: number }[];
}

/** ZkClient is the part of node-zookeeper-client's Client the store calls. */
export interface ZkClient {
  connect(): void;
  close(): void;
  on(event: 'state', listener: (state: { getName(): string }) => void): void;
  getState(): { getName(): string };
  getSessionTimeout(): number;
  create(path: string, data: Buffer | null, acls: unknown[], mode: number, cb: Cb<string>): void;
  remove(path: string, version: number, cb: Cb<void>): void;
  setData(path: string, data: Buffer | null, version: number, cb: Cb<ZkStat>): void;
  getData(path: string, watcher: ((event: unknown) => void) | undefined, cb: (err: unknown, data?: Buffer, stat?: ZkStat) => void): void;
  exists(path: string, watcher: ((event: unknown) => void) | undefined, cb: Cb<ZkStat | null>): void;
  getChildren(path: string, watcher: ((event: unknown) => void) | undefined, cb: (err: unknown, children?: string[], stat?: ZkStat) => void): void;
  mkdirp(path: string, cb: Cb<string>): void;
  transaction(): ZkTransaction;
}

/** ZkModule is the module's exports the store uses. */
export interface ZkModule {
  createClient(connectString: string, options: { sessionTimeout: number; spinDelay: number; retries: number }): ZkClient;
  ACL: { OPEN_ACL_UNSAFE: unknown[] };
}

/** ZK holds the ZooKeeper error codes and create modes the store needs (from the protocol). */
export const ZK = Object.freeze({
  CONNECTION_LOSS: -4,
  OPERATION_TIMEOUT: -7,
  NO_NODE: -101,
  BAD_VERSION: -103,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
  AUTH_FAILED: -115,
  PERSISTENT: 0,
  EPHEMERAL: 1,
  EPHEMERAL_SEQUENTIAL: 3,
});

/**
 * fixVersion sets the version of the last op of a multi: node-zookeeper-client 1.1.3 turns an
 * explicit version 0 into -1 ("any version") in transactions (`version || -1`), which would make
 * a compare-and-set on a fresh node unconditional.
 */
export function fixVersion(tx: ZkTransaction, version: number): ZkTransaction {
  const op = tx.ops[tx.ops.length - 1];
  if (op) op.version = version;
  return tx;
}

let loaded: Promise<ZkModule> | undefined;

/** loadZk imports node-zookeeper-client once, or says how to install it. */
export function loadZk(): Promise<ZkModule> {
  loaded ??= import('node-zookeeper-client' as string).then(
    (m: { default?: ZkModule } & ZkModule) => (m.default ?? m) as ZkModule,
    () => {
      loaded = undefined;
      throw new InvalidConfigError('zookeeper: the zk: store needs the node-zookeeper-client package (npm install node-zookeeper-client)');
    },
  );
  return loaded;
}
