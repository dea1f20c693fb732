/**
 * sqlite:PATH — the embedded default store, shared by every process on one host.
 *
 * Schema (created idempotently on open):
 *
 *   CREATE TABLE baton_leases (
 *     lock TEXT PRIMARY KEY, holder TEXT, term INTEGER NOT NULL, lease_ms INTEGER NOT NULL,
 *     acquired_at INTEGER NOT NULL, renewed_at INTEGER NOT NULL, transitions INTEGER NOT NULL,
 *     step_down INTEGER NOT NULL, metadata TEXT NOT NULL, revision INTEGER NOT NULL);
 *   CREATE TABLE baton_counters (lock TEXT PRIMARY KEY, term INTEGER NOT NULL, revision INTEGER NOT NULL);
 *   CREATE TABLE baton_ledger (key TEXT PRIMARY KEY, value TEXT NOT NULL, version INTEGER NOT NULL);
 *
 * baton_counters' row '#ledger' (not a lock: no lock name starts with '#') keeps the highest
 * version of a removed ledger entry, so that a key made again does not repeat an old version.
 *
 * The fencing token comes from `baton_counters.term`, bumped in the same IMMEDIATE transaction
 * as the acquiring write; that row is never deleted, so a term is never reused even if a lease
 * row is. Revisions come from the same counter row for the same reason. The database runs in
 * WAL mode with synchronous=FULL: a committed term survives power loss.
 *
 * Notification: processes learn of each other's commits through `PRAGMA data_version`,
 * checked when the database's directory changes (inotify through fs.watch) and on a short
 * poll as a safety net; writes from this process are delivered directly. A writer touches the
 * WAL file's times after each write transaction, so the last event comes after the commit is
 * visible (announceCommit).
 *
 * The driver (node:sqlite, else better-sqlite3: see driver.ts) is synchronous: every statement here is a few microseconds, and the busy
 * timeout (1 s) bounds how long a write waits for another process's transaction — a wait spent
 * between attempts with the event loop free, not inside SQLite (busy-wait.ts).
 */
import { existsSync, mkdirSync, rmSync, rmdirSync, utimesSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { InvalidConfigError, StoreClosedError, StoreUnavailableError, errorMessage } from '../../core/errors.js';
import {
  renewedRecord,
  type Ledger,
  type LedgerEntry,
  type LedgerPutResult,
  type LeaseRecord,
  type LeaseStore,
  type LeaseWrite,
  type RenewRequest,
  type RevisionRenewal,
  type StoreCapabilities,
  type WatchListener,
  type WriteResult,
} from '../../core/store.js';
import { BUSY_SLICE_MS, WriteQueue } from './busy-wait.js';
import { isBusy, openDatabase, type SqlDatabase, type SqlStatement } from './driver.js';
import { metadataJson } from '../../core/metadata-json.js';

export interface SqliteStoreOptions {
  /** Safety-net poll for other processes' commits, in ms. Default 100. */
  pollIntervalMs?: number;
  /** How long a write waits for another process's lock, in ms. Default 1000. */
  busyTimeoutMs?: number;
}

interface Row {
  lock: string;
  holder: string | null;
  term: number;
  lease_ms: number;
  acquired_at: number;
  renewed_at: number;
  transitions: number;
  step_down: number;
  metadata: string;
  revision: number;
}

/** SqliteStore keeps leases in one SQLite file (see the header comment for the schema). */
/** LEDGER_FLOOR is the baton_counters row whose revision is the highest removed ledger version. */
const LEDGER_FLOOR = '#ledger';

export class SqliteStore implements LeaseStore {
  readonly kind = 'sqlite';
  readonly capabilities: StoreCapabilities = Object.freeze({ serverExpiry: false });
  readonly path: string;
  readonly ledger: Ledger;
  private readonly db: SqlDatabase;
  private readonly stmt: Record<'get' | 'counter' | 'bumpCounter' | 'upsert' | 'list' | 'revisions' | 'dataVersion' | 'renewCounters' | 'renewLeases', SqlStatement>;
  private readonly writeTx: (lock: string, expected: string | null, next: LeaseWrite) => WriteResult;
  /** Per watched lock: its listeners, and the last record delivered (undefined: only its revision is known). */
  private readonly watchers = new Map<string, { listeners: Set<WatchListener>; lastRevision: string | null; lastRecord?: LeaseRecord | null }>();
  private dirWatcher?: FSWatcher;
  private pollTimer?: NodeJS.Timeout;
  private dataVersion = -1;
  private closed = false;
  private readonly pollIntervalMs: number;
  private readonly writes: WriteQueue;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    if (!path) throw new InvalidConfigError('sqlite: a database path is required');
    this.path = path;
    this.pollIntervalMs = options.pollIntervalMs ?? 100;
    // On any failure below, leave the disk as it was: close, and remove what this call created.
    const created = path === ':memory:' ? [] : missingDirs(dirname(path));
    const newFile = path !== ':memory:' && !existsSync(path);
    const busyTimeoutMs = options.busyTimeoutMs ?? 1000;
    let db: SqlDatabase | undefined;
    try {
      if (path !== ':memory:') makeDirs(dirname(path));
      // Opening waits in SQLite's own busy handler (the constructor is synchronous); every later
      // call waits in slices, with the event loop free in between (busy-wait.ts).
      db = openDatabase(path, busyTimeoutMs);
      // Before anything is written (WAL mode included): a file whose tables are someone else's is refused.
      checkSchema(db, path);
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = FULL');
      db.exec(`
        CREATE TABLE IF NOT EXISTS baton_leases (
          lock TEXT PRIMARY KEY, holder TEXT, term INTEGER NOT NULL, lease_ms INTEGER NOT NULL,
          acquired_at INTEGER NOT NULL, renewed_at INTEGER NOT NULL, transitions INTEGER NOT NULL,
          step_down INTEGER NOT NULL, metadata TEXT NOT NULL, revision INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS baton_counters (
          lock TEXT PRIMARY KEY, term INTEGER NOT NULL, revision INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS baton_ledger (key TEXT PRIMARY KEY, value TEXT NOT NULL, version INTEGER NOT NULL);`);
      db.exec(`PRAGMA busy_timeout = ${Math.min(BUSY_SLICE_MS, Math.max(0, Math.round(busyTimeoutMs)))}`);
      this.db = db;
    } catch (err) {
      try {
        db?.close();
      } catch {
        // closing is best effort on a path that already failed
      }
      if (newFile) for (const f of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) rmSync(f, { force: true });
      for (const dir of created.reverse()) rmdirQuietly(dir);
      if (err instanceof InvalidConfigError) throw err;
      if (isBusy(err)) {
        throw new StoreUnavailableError(`sqlite: "${path}" is busy: ${errorMessage(err)}`, { cause: err });
      }
      throw new InvalidConfigError(`sqlite: cannot use "${path}": ${errorMessage(err)}`);
    }
    this.writes = new WriteQueue(this.db, busyTimeoutMs, isBusy);
    this.stmt = {
      get: this.db.prepare('SELECT * FROM baton_leases WHERE lock = ?'),
      counter: this.db.prepare('SELECT term, revision FROM baton_counters WHERE lock = ?'),
      bumpCounter: this.db.prepare(
        `INSERT INTO baton_counters (lock, term, revision) VALUES (?, ?, ?)
         ON CONFLICT(lock) DO UPDATE SET term = excluded.term, revision = excluded.revision`,
      ),
      upsert: this.db.prepare(
        `INSERT INTO baton_leases (lock, holder, term, lease_ms, acquired_at, renewed_at, transitions, step_down, metadata, revision)
         VALUES (@lock, @holder, @term, @lease_ms, @acquired_at, @renewed_at, @transitions, @step_down, @metadata, @revision)
         ON CONFLICT(lock) DO UPDATE SET holder = excluded.holder, term = excluded.term, lease_ms = excluded.lease_ms,
           acquired_at = excluded.acquired_at, renewed_at = excluded.renewed_at, transitions = excluded.transitions,
           step_down = excluded.step_down, metadata = excluded.metadata, revision = excluded.revision`,
      ),
      list: this.db.prepare('SELECT * FROM baton_leases ORDER BY lock'),
      // The revisions of every watched lock in one statement (a JSON array of names).
      revisions: this.db.prepare('SELECT lock, revision FROM baton_leases WHERE lock IN (SELECT value FROM json_each(?))'),
      dataVersion: this.db.prepare('PRAGMA data_version'),
      // A renewal-only batch (renewRevisions) is these two statements over a JSON array of
      // [lock, expected revision, renewedAt]. First the compare: the counters of the leases still
      // at their expected revision are bumped (a missing counter row is made from the lease's);
      // their new revisions are returned. Then those same leases take their counter's revision.
      renewCounters: this.db.prepare(
        `INSERT INTO baton_counters (lock, term, revision)
         SELECT l.lock, l.term, l.revision + 1 FROM json_each(?) AS j
           JOIN baton_leases AS l ON l.lock = j.value ->> 0 AND l.revision = j.value ->> 1 WHERE true
         ON CONFLICT(lock) DO UPDATE SET revision = max(baton_counters.revision + 1, excluded.revision)
         RETURNING lock, revision`,
      ),
      renewLeases: this.db.prepare(
        `UPDATE baton_leases SET renewed_at = j.value ->> 2, revision = c.revision
         FROM json_each(?) AS j JOIN baton_counters AS c ON c.lock = j.value ->> 0
         WHERE baton_leases.lock = j.value ->> 0 AND baton_leases.revision = j.value ->> 1`,
      ),
    };
    // One conditional write: read, compare, bump counters, write — inside an IMMEDIATE
    // transaction of its own, or shared with the writes that waited with it (busy-wait.ts).
    const tx = (lock: string, expected: string | null, next: LeaseWrite): WriteResult => {
      const row = this.stmt.get.get(lock) as Row | undefined;
      // The full record (its metadata parsed) only when it is returned: a lost race.
      if (expected === null ? row !== undefined : row === undefined || String(row.revision) !== expected) return { ok: false, current: row ? toRecord(row) : null };
      const counter = (this.stmt.counter.get(lock) as { term: number; revision: number } | undefined) ?? { term: 0, revision: 0 };
      const term = next.newTerm ? counter.term + 1 : row ? Number(row.term) : counter.term;
      const revision = counter.revision + 1;
      this.stmt.bumpCounter.run(lock, Math.max(term, counter.term), revision);
      const newRow: Row = {
        lock,
        holder: next.holder,
        term,
        lease_ms: next.leaseDurationMs,
        acquired_at: Math.round(next.acquiredAt),
        renewed_at: Math.round(next.renewedAt),
        transitions: next.transitions,
        step_down: next.stepDownRequested ? 1 : 0,
        metadata: metadataJson(next.metadata),
        revision,
      };
      this.stmt.upsert.run(newRow);
      return { ok: true, record: toRecord(newRow, next.metadata && Object.isFrozen(next.metadata) ? next.metadata : undefined) };
    };
    this.writeTx = tx;
    this.renewTx = (reqs) => reqs.map((r) => tx(r.lock, r.expected, r.next));
    this.renewRevisionsTx = (items) => this.renewRevisionsNow(items);
    this.ledger = this.makeLedger();
  }

  private makeLedger(): Ledger {
    const get = this.db.prepare('SELECT key, value, version FROM baton_ledger WHERE key = ?');
    // A removed entry's version is kept as a floor (counter row LEDGER_FLOOR, never a lock name:
    // it starts with punctuation), and a key made again starts above it, so no version of one
    // life of a key is a version of another.
    const insert = this.db.prepare(
      `INSERT INTO baton_ledger (key, value, version)
       VALUES (?, ?, 1 + coalesce((SELECT revision FROM baton_counters WHERE lock = '${LEDGER_FLOOR}'), 0)) ON CONFLICT(key) DO NOTHING`,
    );
    const update = this.db.prepare('UPDATE baton_ledger SET value = ?, version = version + 1 WHERE key = ? AND version = ?');
    const list = this.db.prepare('SELECT key, value, version FROM baton_ledger WHERE key >= ? ORDER BY key LIMIT ?');
    const removeAt = this.db.prepare('DELETE FROM baton_ledger WHERE key = ? AND version = ?');
    const raiseFloor = this.db.prepare(
      `INSERT INTO baton_counters (lock, term, revision) VALUES ('${LEDGER_FLOOR}', 0, ?)
       ON CONFLICT(lock) DO UPDATE SET revision = max(revision, excluded.revision)`,
    );
    const remove = (key: string, version: string): boolean => {
      if (!/^\d{1,15}$/.test(version) || removeAt.run(key, Number(version)).changes !== 1) return false;
      raiseFloor.run(Number(version));
      return true;
    };
    const toEntry = (r: { key: string; value: string; version: number }): LedgerEntry => Object.freeze({ key: r.key, value: r.value, version: String(r.version) });
    const read = (key: string) => {
      const r = get.get(key) as { key: string; value: string; version: number } | undefined;
      return r ? toEntry(r) : null;
    };
    const put = (key: string, expected: string | null, value: string): LedgerPutResult => {
      const changed = expected === null ? insert.run(key, value).changes : update.run(value, key, Number(expected)).changes;
      const current = read(key);
      return changed === 1 && current ? { ok: true, entry: current } : { ok: false, current };
    };
    return {
      get: (key) => this.reading(() => read(key)),
      put: (key, expected, value) => this.writing(() => put(key, expected, value)),
      list: (prefix, limit = 1000) =>
        this.reading(() => (list.all(prefix, limit) as { key: string; value: string; version: number }[]).filter((r) => r.key.startsWith(prefix)).map(toEntry)),
      remove: (key, version) => this.writing(() => remove(key, version)),
    };
  }

  private readonly renewTx: (reqs: readonly RenewRequest[]) => WriteResult[];
  private readonly renewRevisionsTx: (items: readonly RevisionRenewal[]) => (string | null)[];

  read(lock: string): Promise<LeaseRecord | null> {
    return this.reading(() => {
      const row = this.stmt.get.get(lock) as Row | undefined;
      return row ? toRecord(row) : null;
    });
  }

  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    const result = await this.writing(() => this.writeTx(lock, expected, next));
    if (result.ok) this.deliver(lock, result.record);
    return result;
  }

  async renewMany(requests: readonly RenewRequest[]): Promise<WriteResult[]> {
    const results = await this.writing(() => this.renewTx(requests));
    results.forEach((r, i) => r.ok && this.deliver(requests[i]!.lock, r.record));
    return results;
  }

  /**
   * renewRevisions renews a whole batch with two statements in one transaction (its own, or shared with the writes that waited with it) (see
   * `renewCounters` and `renewLeases` above) instead of four per lease. Watchers on this handle
   * hear of each renewal as they hear of a write (other processes learn through data_version).
   */
  async renewRevisions(items: readonly RevisionRenewal[]): Promise<(string | null)[]> {
    if (items.length === 0) return [];
    const revisions = await this.writing(() => this.renewRevisionsTx(items));
    if (this.watchers.size === 0) return revisions;
    // Listeners are called as deliver() calls them — later, never inside this call — but in one
    // microtask for the whole batch rather than one each.
    const calls: (WatchListener | LeaseRecord | null)[] = [];
    for (let i = 0; i < items.length; i++) {
      const revision = revisions[i];
      const w = revision ? this.watchers.get(items[i]!.lock) : undefined;
      if (!w || !revision) continue;
      // The record renewed is the one at `expected`: rebuild it from the last one delivered, or
      // read it. The renewals are committed: a failed read must not answer them as failed.
      const last = w.lastRecord;
      let record: LeaseRecord | null;
      try {
        record = last && last.revision === items[i]!.expected ? renewedRecord(last, items[i]!.renewedAt, revision) : this.readNow(items[i]!.lock);
      } catch {
        continue;
      }
      w.lastRevision = record?.revision ?? null;
      w.lastRecord = record;
      for (const l of w.listeners) calls.push(l, record);
    }
    if (calls.length > 0) {
      queueMicrotask(() => {
        for (let k = 0; k < calls.length; k += 2) (calls[k] as WatchListener)(calls[k + 1] as LeaseRecord | null);
      });
    }
    return revisions;
  }

  /**
   * renewRevisionsNow runs inside the transaction. A lock named twice in one batch is renewed in
   * a second round (the first renewal changed its revision, as it would have one after another).
   */
  private renewRevisionsNow(items: readonly RevisionRenewal[]): (string | null)[] {
    const out: (string | null)[] = new Array<string | null>(items.length).fill(null);
    let todo: number[] = items.map((_, i) => i);
    while (todo.length > 0) {
      const round: (string | number)[][] = [];
      const roundIndexes: number[] = [];
      const later: number[] = [];
      const seen = new Set<string>();
      for (const i of todo) {
        const { lock, expected, renewedAt } = items[i]!;
        // Revisions here are integers; any other text cannot match (the compare is on the text).
        const n = Number(expected);
        if (!Number.isSafeInteger(n) || String(n) !== expected) continue;
        if (seen.has(lock)) {
          later.push(i);
          continue;
        }
        seen.add(lock);
        round.push([lock, n, Number.isFinite(renewedAt) ? Math.round(renewedAt) : 0]);
        roundIndexes.push(i);
      }
      if (round.length > 0) {
        const json = JSON.stringify(round);
        const renewed = new Map<string, number>();
        for (const r of this.stmt.renewCounters.all(json) as { lock: string; revision: number }[]) renewed.set(r.lock, r.revision);
        if (renewed.size > 0) this.stmt.renewLeases.run(json);
        for (const i of roundIndexes) {
          const revision = renewed.get(items[i]!.lock);
          if (revision !== undefined) out[i] = String(revision);
        }
      }
      todo = later;
    }
    return out;
  }

  private readNow(lock: string): LeaseRecord | null {
    const row = this.stmt.get.get(lock) as Row | undefined;
    return row ? toRecord(row) : null;
  }

  list(): Promise<LeaseRecord[]> {
    return this.reading(() => (this.stmt.list.all() as Row[]).map((row) => toRecord(row)));
  }

  watch(lock: string, listener: WatchListener): () => void {
    if (this.closed) throw new StoreClosedError('sqlite');
    let w = this.watchers.get(lock);
    if (!w) {
      const row = this.stmt.get.get(lock) as Row | undefined;
      this.watchers.set(lock, (w = { listeners: new Set(), lastRevision: row ? String(row.revision) : null }));
    }
    w.listeners.add(listener);
    this.startWatching();
    return () => {
      w!.listeners.delete(listener);
      if (w!.listeners.size === 0) this.watchers.delete(lock);
      if (this.watchers.size === 0) this.stopWatching();
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.writes.close(() => new StoreClosedError('sqlite'));
    this.stopWatching();
    this.watchers.clear();
    this.db.close();
  }

  /** reading runs a read, waiting out a busy database for up to the busy timeout. */
  private async reading<T>(fn: () => T): Promise<T> {
    if (this.closed) throw new StoreClosedError('sqlite');
    return this.writes.read(fn).catch((err) => this.failed(err));
  }

  /** writing runs `tx` in a write transaction after this handle's earlier ones, waiting out another process's lock. */
  private async writing<T>(tx: () => T): Promise<T> {
    if (this.closed) throw new StoreClosedError('sqlite');
    const result = await this.writes.write(tx).catch((err) => this.failed(err));
    this.announceCommit();
    return result;
  }

  /**
   * announceCommit touches the WAL file's times once a write transaction is over. Other
   * processes watch the directory (inotify), but a commit's last step — publishing it in the
   * WAL index, a shared-memory map — makes no file event: the events of its WAL writes all come
   * before the commit is visible, so a process checking on them saw nothing new and heard of
   * the commit only at its next poll, up to pollIntervalMs later (7–56 ms in a crash-failover
   * probe, every such delay added to the failover). A change of times is an event after it.
   * Best effort: a WAL file we may not touch (another user's) leaves the poll to find it.
   */
  private announceCommit(): void {
    if (this.path === ':memory:' || this.closed) return;
    const now = Date.now() / 1000;
    try {
      utimesSync(`${this.path}-wal`, now, now);
    } catch {
      // not ours to touch, or checkpointed away: the other processes' poll still finds the commit
    }
  }

  private failed(err: unknown): never {
    if (err instanceof StoreClosedError) throw err;
    throw new StoreUnavailableError(`sqlite: ${this.path}: ${errorMessage(err)}`, { cause: err });
  }

  private deliver(lock: string, record: LeaseRecord | null): void {
    const w = this.watchers.get(lock);
    if (!w) return;
    w.lastRevision = record?.revision ?? null;
    w.lastRecord = record;
    for (const l of [...w.listeners]) queueMicrotask(() => l(record));
  }

  private startWatching(): void {
    if (this.pollTimer || this.closed) return;
    this.dataVersion = Number(this.db.value(this.stmt.dataVersion));
    const check = () => this.checkForeignCommits();
    this.pollTimer = setInterval(check, this.pollIntervalMs);
    this.pollTimer.unref();
    if (this.path !== ':memory:') {
      try {
        const base = basename(this.path);
        this.dirWatcher = watch(dirname(this.path), { persistent: false }, (_event, name) => {
          if (!name || String(name).startsWith(base)) check();
        });
        this.dirWatcher.on('error', () => this.dirWatcher?.close());
      } catch {
        // No inotify (e.g. some network filesystems): the poll alone still works.
      }
    }
  }

  private stopWatching(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    this.dirWatcher?.close();
    this.dirWatcher = undefined;
  }

  /**
   * Another process committed? Read the watched locks' revisions — in one statement, since a
   * process may watch thousands of locks (a shard group's member) and other processes commit
   * many times a second — and re-read and deliver only the records that changed.
   */
  private checkForeignCommits(): void {
    if (this.closed) return;
    try {
      const version = Number(this.db.value(this.stmt.dataVersion));
      if (version === this.dataVersion) return;
      this.dataVersion = version;
      if (this.watchers.size === 0) return;
      const revisions = new Map<string, string>();
      for (const r of this.stmt.revisions.all(JSON.stringify([...this.watchers.keys()])) as { lock: string; revision: number }[]) {
        revisions.set(r.lock, String(r.revision));
      }
      for (const [lock, w] of this.watchers) {
        if ((revisions.get(lock) ?? null) === w.lastRevision) continue;
        const row = this.stmt.get.get(lock) as Row | undefined;
        this.deliver(lock, row ? toRecord(row) : null);
      }
    } catch {
      // A busy or locked database: the next check will see the change.
    }
  }
}

/**
 * makeDirs creates a directory and its missing parents one level at a time. (Node's recursive
 * mkdirSync loops forever under /proc, where mkdir fails with ENOENT for an existing parent.)
 */
/** missingDirs lists the directories makeDirs(dir) would create, outermost first. */
function missingDirs(dir: string): string[] {
  const out: string[] = [];
  for (let d = dir; !existsSync(d); d = dirname(d)) {
    out.unshift(d);
    if (dirname(d) === d) break;
  }
  return out;
}

/** BATON_COLUMNS: the columns each of baton's tables must have (more are tolerated). */
const BATON_COLUMNS: Record<string, readonly string[]> = {
  baton_leases: ['lock', 'holder', 'term', 'lease_ms', 'acquired_at', 'renewed_at', 'transitions', 'step_down', 'metadata', 'revision'],
  baton_counters: ['lock', 'term', 'revision'],
  baton_ledger: ['key', 'value', 'version'],
};

/**
 * checkSchema refuses a file that has a table of one of baton's names without baton's columns:
 * someone else's table, which baton must neither write into nor fail on with raw SQL.
 */
function checkSchema(db: SqlDatabase, path: string): void {
  for (const [table, columns] of Object.entries(BATON_COLUMNS)) {
    const present = (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name);
    if (present.length === 0) continue;
    const missing = columns.filter((c) => !present.includes(c));
    if (missing.length > 0) {
      throw new InvalidConfigError(
        `sqlite: ${path} has a table "${table}" that is not baton's (it lacks ${missing.join(', ')}); point --store at another file`,
      );
    }
  }
}

function makeDirs(dir: string): void {
  if (existsSync(dir)) return;
  const parent = dirname(dir);
  if (parent !== dir) makeDirs(parent);
  mkdirSync(dir);
}

/** toRecord turns a row into a frozen record; `metadata`, when given, is the row's, already parsed. */
function toRecord(row: Row, parsed?: LeaseRecord['metadata']): LeaseRecord {
  let metadata = parsed ?? {};
  if (parsed === undefined) {
    try {
      metadata = JSON.parse(row.metadata);
    } catch {
      // A hand-edited row: keep going without metadata.
    }
  }
  return Object.freeze({
    lock: row.lock,
    holder: row.holder,
    term: Number(row.term),
    leaseDurationMs: Number(row.lease_ms),
    acquiredAt: Number(row.acquired_at),
    renewedAt: Number(row.renewed_at),
    transitions: Number(row.transitions),
    stepDownRequested: row.step_down === 1,
    metadata,
    revision: String(row.revision),
  });
}

/** rmdirQuietly removes an empty directory this store created, if it still can. */
function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty (someone else wrote there) or already gone: leave it
  }
}
