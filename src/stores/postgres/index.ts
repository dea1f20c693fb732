/**
 * postgres://user:pass@host:port/db?table=baton_leases&schema=… — leases in a PostgreSQL table.
 *
 * Schema (created idempotently on first use, under an advisory lock; `baton_leases` is the
 * `table` option and every other name derives from it):
 *
 *   CREATE TABLE baton_leases (
 *     lock text COLLATE "C" PRIMARY KEY, holder text, term bigint NOT NULL, lease_ms bigint NOT NULL,
 *     acquired_at bigint NOT NULL, renewed_at bigint NOT NULL, transitions bigint NOT NULL,
 *     step_down boolean NOT NULL, metadata json NOT NULL, revision bigint NOT NULL) WITH (fillfactor = 50);
 *   CREATE TABLE baton_leases_terms  (lock text COLLATE "C" PRIMARY KEY, term bigint NOT NULL);
 *   CREATE TABLE baton_leases_ledger (key text COLLATE "C" PRIMARY KEY, value text NOT NULL, version bigint NOT NULL);
 *   CREATE SEQUENCE baton_leases_revision;
 *
 * The fencing token comes from `baton_leases_terms`, a per-lock counter that baton never
 * deletes; an acquisition advances it in the same statement as its write, so a term is never
 * reused — not after a release, nor after someone deletes the lease row. Revisions (and ledger
 * versions) come from the sequence, which never hands out a value twice, so a stale
 * compare-and-set can never match a re-created row. Every operation is one statement (sql.ts).
 *
 * Expiry is the elector's business (serverExpiry: false): no statement compares clocks.
 *
 * Notification: each successful write sends `NOTIFY "<schema>.<table>"` with the new record as
 * JSON in the same statement, so standbys learn of renewals and releases without reading. A
 * dedicated session per store LISTENs (listener.ts); it is re-established after failures and
 * watchers are then told to read. Writes work through a transaction-mode pooler; LISTEN needs a
 * direct session (or `listen=false`, and electors poll).
 */
import { BatonError, InvalidConfigError, StoreClosedError } from '../../core/errors.js';
import type {
  Ledger,
  LedgerEntry,
  LedgerPutResult,
  LeaseRecord,
  LeaseStore,
  LeaseWrite,
  RenewRequest,
  RevisionRenewal,
  StoreCapabilities,
  WatchListener,
  WriteResult,
} from '../../core/store.js';
import type { Client, Pool } from 'pg';
import { parsePostgresUrl, resolveTuning, type PostgresTuning } from './config.js';
import { PgConnection, type QueryFn, type Row } from './connection.js';
import { UNDEFINED_TABLE, isRetryable, sqlState, unavailable } from './errors.js';
import { ChangeFeed } from './listener.js';
import { Watchers } from './watchers.js';
import { PostgresNames, PostgresStatements, payloadLock, schemaDdl, toRecord, type LeaseRow } from './sql.js';

/**
 * PostgresStoreOptions: exactly one of `connectionString` (the store opens its own pool; baton's
 * URL options may be in its query), `pool` or `client` (the application's; baton never ends
 * them). Tuning given here overrides the URL's.
 */
export interface PostgresStoreOptions extends Partial<PostgresTuning> {
  connectionString?: string;
  pool?: Pool;
  client?: Client;
  /** Background failures (an idle connection lost, the LISTEN session lost). Default: ignored. */
  onError?: (err: BatonError) => void;
}

/** How many times a statement is resent after a serialization failure or deadlock. */
const RETRIES = 3;

/** PostgresStore keeps leases in PostgreSQL (see the header comment for the schema). */
export class PostgresStore implements LeaseStore {
  readonly kind = 'postgres';
  readonly capabilities: StoreCapabilities;
  readonly ledger: Ledger;
  readonly tuning: Readonly<PostgresTuning>;
  private readonly conn: PgConnection;
  private readonly onError: (err: BatonError) => void;
  private names?: PostgresNames;
  private ready?: Promise<PostgresStatements>;
  private readonly watchers = new Watchers();
  private feed?: ChangeFeed;
  private closed = false;

  constructor(options: PostgresStoreOptions) {
    const { connectionString, pool, client, onError, ...tuning } = options ?? {};
    let conn: { connectionString?: string; pool?: Pool; client?: Client } = { pool, client };
    if (connectionString !== undefined) {
      const parsed = parsePostgresUrl(connectionString, tuning);
      this.tuning = Object.freeze(parsed.tuning);
      conn = { connectionString: parsed.connectionString, pool, client };
    } else {
      this.tuning = Object.freeze(resolveTuning(tuning));
    }
    this.onError = onError ?? (() => {});
    this.conn = new PgConnection(conn, this.tuning, (err) => this.onError(unavailable(err, this.conn.where)));
    this.capabilities = Object.freeze({ serverExpiry: false });
    // Without LISTEN there is no change feed: no `watch`, and electors poll.
    if (this.tuning.listen) this.watch = (lock, listener) => this.watchLock(lock, listener);
    this.ledger = this.makeLedger();
  }

  async read(lock: string): Promise<LeaseRecord | null> {
    const [row] = await this.run((s) => s.read, [lock]);
    return row ? toRecord(row as unknown as LeaseRow) : null;
  }

  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    const create = expected === null;
    // Acquisitions and renewals are timed by their elector from this call; releases are not.
    const timed = next.holder !== null;
    const rows = await this.run((s) => (create ? s.create : s.update), [
      lock,
      create ? null : revisionParam(expected),
      next.holder,
      next.newTerm,
      Math.round(next.leaseDurationMs),
      Math.round(next.acquiredAt),
      Math.round(next.renewedAt),
      Math.round(next.transitions),
      next.stepDownRequested,
      JSON.stringify(next.metadata ?? {}),
    ], timed);
    const row = rows[0] as unknown as (LeaseRow & { ok: boolean }) | undefined;
    // No row at all: a create lost to a row this statement could not see yet.
    if (!row) return { ok: false, current: create ? undefined : null };
    if (!row.ok) return { ok: false, current: toRecord(row) };
    const record = toRecord(row);
    this.watchers.deliver(lock, record);
    return { ok: true, record };
  }

  async renewMany(requests: readonly RenewRequest[]): Promise<WriteResult[]> {
    if (requests.length === 0) return [];
    // Acquisitions need the term counter: they go one by one (the elector never batches them).
    if (requests.some((r) => r.next.newTerm)) return Promise.all(requests.map((r) => this.write(r.lock, r.expected, r.next)));
    const column = <T>(f: (r: RenewRequest) => T) => requests.map(f);
    const rows = await this.run((s) => s.renewMany, [
      column((r) => r.lock),
      column((r) => revisionParam(r.expected)),
      column((r) => r.next.holder),
      column((r) => Math.round(r.next.leaseDurationMs)),
      column((r) => Math.round(r.next.acquiredAt)),
      column((r) => Math.round(r.next.renewedAt)),
      column((r) => Math.round(r.next.transitions)),
      column((r) => r.next.stepDownRequested),
      column((r) => JSON.stringify(r.next.metadata ?? {})),
    ], true);
    const results: WriteResult[] = requests.map(() => ({ ok: false }));
    for (const raw of rows) {
      const row = raw as unknown as LeaseRow & { ok: boolean; i: string };
      const i = Number(row.i) - 1;
      if (!(i >= 0 && i < results.length)) continue;
      if (row.ok) {
        const record = toRecord(row);
        results[i] = { ok: true, record };
        this.watchers.deliver(record.lock, record);
      } else {
        results[i] = { ok: false, current: row.lock === null ? null : toRecord(row) };
      }
    }
    return results;
  }

  /**
   * renewRevisions renews a batch in one statement with revisions only: no record is sent or
   * returned (the caller builds the renewed record). Each renewed row is still announced by
   * NOTIFY with the whole record, so standbys anywhere hear it as they hear any renewal.
   */
  async renewRevisions(items: readonly RevisionRenewal[]): Promise<(string | null)[]> {
    if (items.length === 0) return [];
    const locks: string[] = new Array(items.length);
    const expected: string[] = new Array(items.length);
    const renewedAt: number[] = new Array(items.length);
    for (let i = 0; i < items.length; i++) {
      const it = items[i]!;
      locks[i] = it.lock;
      expected[i] = revisionParam(it.expected);
      renewedAt[i] = Number.isFinite(it.renewedAt) ? Math.round(it.renewedAt) : 0;
    }
    const rows = await this.run((s) => s.renewRevisions, [locks, expected, renewedAt], true);
    const out: (string | null)[] = new Array<string | null>(items.length).fill(null);
    for (const raw of rows) {
      const i = Number(raw.i) - 1;
      if (i >= 0 && i < out.length) out[i] = String(raw.revision);
    }
    return out;
  }

  async list(): Promise<LeaseRecord[]> {
    return (await this.run((s) => s.list, [])).map((row) => toRecord(row as unknown as LeaseRow));
  }

  /** watch is present unless the store was opened with `listen=false` (see watchLock). */
  readonly watch?: (lock: string, listener: WatchListener) => () => void;

  private watchLock(lock: string, listener: WatchListener): () => void {
    if (this.closed) throw new StoreClosedError('postgres');
    const remove = this.watchers.add(lock, listener);
    this.startFeed();
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      if (remove()) this.stopFeed();
    };
  }

  /** listening tells whether this store's LISTEN session is in place (for tests and status). */
  get listening(): boolean {
    return this.feed?.listening ?? false;
  }

  /** watchLive: false while the LISTEN session is (re)connecting; see LeaseStore.watchLive. */
  get watchLive(): boolean {
    return this.listening;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watchers.close();
    this.stopFeed();
    await this.conn.close();
  }

  // ---- internals -------------------------------------------------------------------------

  /**
   * run sends one statement (`timed`: see QueryFn), creating the schema first if needed. Only failures that prove the
   * statement was rolled back are retried; anything else becomes StoreUnavailableError.
   */
  private async run(statement: (s: PostgresStatements) => string, values: unknown[], timed = false): Promise<Row[]> {
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw new StoreClosedError('postgres');
      try {
        const s = await this.statements();
        return await this.conn.query(statement(s), values, timed);
      } catch (err) {
        if (this.closed) throw new StoreClosedError('postgres');
        if (attempt < RETRIES && isRetryable(err)) continue;
        if (attempt === 0 && sqlState(err) === UNDEFINED_TABLE) {
          this.ready = undefined; // dropped behind our back: create again
          continue;
        }
        throw err instanceof BatonError ? err : unavailable(err, this.conn.where);
      }
    }
  }

  /** statements resolves once the tables exist; a failed attempt is retried by the next call. */
  private statements(): Promise<PostgresStatements> {
    if (!this.ready) {
      const ready = this.setUp();
      this.ready = ready;
      ready.catch(() => {
        if (this.ready === ready) this.ready = undefined;
      });
    }
    return this.ready;
  }

  private async setUp(): Promise<PostgresStatements> {
    const { table, schema } = this.tuning;
    const probe = async (query: QueryFn) => {
      const [row] = await query(
        `SELECT s.name AS schema, to_regnamespace(quote_ident(s.name)) IS NOT NULL AS schema_exists,
           (SELECT count(*) FROM unnest(ARRAY['', '_terms', '_ledger', '_revision']) AS x(suffix)
             WHERE to_regclass(format('%I.%I', s.name, $2::text || x.suffix)) IS NOT NULL)::int AS present
         FROM (SELECT coalesce($1::text, current_schema()) AS name) AS s`,
        [schema ?? null, table],
      );
      return row as { schema: string | null; schema_exists: boolean; present: number };
    };
    let found = await probe(this.conn.query);
    if (!found.schema) throw new InvalidConfigError('postgres: no schema on the search_path exists; name one with ?schema=');
    const names = new PostgresNames(found.schema, table);
    // Before creating anything: tables of these names must be baton's.
    await this.checkColumns(names);
    if (found.present !== 4) {
      // Several processes may start at once; the advisory lock makes creation happen once.
      await this.conn.transaction(async (query) => {
        await query(`SELECT pg_advisory_xact_lock(hashtext('baton:' || $1::text))`, [names.plain.leases]);
        found = await probe(query);
        for (const ddl of schemaDdl(names, !found.schema_exists)) await query(ddl);
      });
    }
    this.names = names;
    return new PostgresStatements(names);
  }

  /**
   * checkColumns refuses tables of baton's names that lack baton's columns (someone else's
   * table): a configuration error naming the table, not a raw SQL failure on every call.
   */
  private async checkColumns(names: PostgresNames): Promise<void> {
    const expected: Record<string, readonly string[]> = {
      [names.table]: ['lock', 'holder', 'term', 'lease_ms', 'acquired_at', 'renewed_at', 'transitions', 'step_down', 'metadata', 'revision'],
      [`${names.table}_terms`]: ['lock', 'term'],
      [`${names.table}_ledger`]: ['key', 'value', 'version'],
    };
    const rows = await this.conn.query(
      `SELECT table_name::text AS name, array_agg(column_name::text) AS columns FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = ANY($2::text[]) GROUP BY table_name`,
      [names.schema, Object.keys(expected)],
    );
    for (const row of rows as { name: string; columns: string[] }[]) {
      const missing = (expected[row.name] ?? []).filter((c) => !row.columns.includes(c));
      if (missing.length > 0) {
        throw new InvalidConfigError(
          `postgres: table "${names.schema}.${row.name}" in ${this.conn.where} is not baton's (it lacks ${missing.join(', ')}); name another with ?table=`,
        );
      }
    }
  }

  private makeLedger(): Ledger {
    const toEntry = (r: Row): LedgerEntry => Object.freeze({ key: String(r.key), value: String(r.value), version: String(r.version) });
    return {
      get: async (key) => {
        const [row] = await this.run((s) => s.ledgerGet, [key]);
        return row ? toEntry(row) : null;
      },
      put: async (key, expected, value): Promise<LedgerPutResult> => {
        const create = expected === null;
        const [row] = await this.run((s) => (create ? s.ledgerCreate : s.ledgerUpdate), [key, create ? null : revisionParam(expected), value]);
        if (!row) return { ok: false, current: create ? undefined : null };
        return row.ok ? { ok: true, entry: toEntry(row) } : { ok: false, current: toEntry(row) };
      },
      list: async (prefix, limit = 1000) => (await this.run((s) => s.ledgerList, [prefix, limit])).map(toEntry),
      remove: async (key, version) => (await this.run((s) => s.ledgerRemove, [key, revisionParam(version)])).length === 1,
    };
  }

  private startFeed(): void {
    if (this.feed || !this.tuning.listen || this.closed) return;
    const feed = new ChangeFeed({
      // The channel names the schema, which may be known only once the store has set up.
      channel: () => this.names?.channel ?? '',
      open: async () => {
        await this.statements();
        return this.conn.openListenSession(() => this.names!.channel);
      },
      heartbeatMs: this.tuning.heartbeatMs,
      queryTimeoutMs: this.tuning.queryTimeoutMs,
      onPayload: (payload) => this.onPayload(payload),
      onResubscribed: () => this.watchers.readAgain(),
      onLost: () => this.watchers.readAgain(),
      onError: (err) => this.onError(err instanceof BatonError ? err : unavailable(err, this.conn.where)),
    });
    this.feed = feed;
    feed.start();
  }

  private stopFeed(): void {
    this.feed?.stop();
    this.feed = undefined;
  }

  private onPayload(payload: string): void {
    // A full payload goes to its lock's decoder, which parses it only if it is not a renewal of
    // the last one it decoded (PayloadDecoder).
    const lock = payloadLock(payload);
    const decoder = lock === undefined ? undefined : this.watchers.decoder(lock);
    const record = decoder?.decode(payload);
    if (record) return this.watchers.deliver(lock!, record);
    if (lock !== undefined && !decoder) return; // nobody here watches it
    let data: Partial<LeaseRow> | undefined;
    try {
      data = JSON.parse(payload);
    } catch {
      return; // not ours
    }
    if (!data || typeof data.lock !== 'string' || !this.watchers.has(data.lock)) return;
    // A record too big for a payload comes as {lock, revision}: the watcher reads it.
    this.watchers.deliver(data.lock, 'holder' in data ? toRecord(data as LeaseRow) : undefined, data.revision);
  }
}

/** A revision that is not a bigint can match no row: send one that cannot exist. */
function revisionParam(expected: string): string {
  return /^\d{1,18}$/.test(expected) ? expected : '-1';
}
