/**
 * MysqlBackend is the kit's CasBackend on one MySQL/MariaDB table (sql.ts): `create` is an
 * INSERT that a duplicate key refuses, `replace` an UPDATE whose WHERE names the expected
 * version, `replaceMany` one UPDATE for a whole batch, `renewValues` (the renewal-only batch)
 * one UPDATE per 1,000 leases that sends no record.
 *
 * Versions are 96 random bits (16 base64url characters) drawn by the writer, not a per-row
 * counter: a counter would start again at 1 after an operator deletes a row, and a holder still
 * carrying that old "1" could then overwrite the new row. Random versions let a batch learn its
 * new versions without reading them back.
 *
 * There is no change feed: standbys poll every retry period (one primary-key SELECT each).
 */
import { randomBytes } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import { StoreUnavailableError, errorMessage } from '../../core/errors.js';
import type { RevisionRenewal } from '../../core/store.js';
import { leaseKey, type BackendItem, type CasBackend, type ReplaceItem } from '../kit/backend.js';
import { oneLine } from '../kit/errors.js';
import { ClosedGuard } from '../kit/guard.js';
import { withTimeout } from '../kit/timeout.js';
import { MysqlStatements, likePrefix, renewRow, sqlLiteral } from './sql.js';

/** MysqlBackendOptions: the per-statement bound, whether the pool is baton's to end, a label. */
export interface MysqlBackendOptions {
  readonly timeoutMs: number;
  readonly ownsPool: boolean;
  readonly label: string;
}

/** ER_DUP_ENTRY: the key exists (a lost create). */
const ER_DUP_ENTRY = 1062;
/** ER_LOCK_DEADLOCK: InnoDB (or a Galera certification failure) rolled the statement back: not applied. */
const ER_LOCK_DEADLOCK = 1213;

type Row = Record<string, unknown>;

/** newVersion draws a fresh version (see the file comment). */
function newVersion(): string {
  return randomBytes(12).toString('base64url');
}

/** newVersions draws `n` fresh versions with one call into the random source (12 bytes = 16 characters each). */
function newVersions(n: number): string[] {
  const text = randomBytes(12 * n).toString('base64url');
  return Array.from({ length: n }, (_, i) => text.slice(16 * i, 16 * i + 16));
}

/** Leases per renewal-only UPDATE (~100 bytes each), and how many such UPDATEs one batch has in flight. */
const RENEW_CHUNK = 1000;
const RENEW_IN_FLIGHT = 2;

/** MysqlBackend: see the file comment. */
export class MysqlBackend implements CasBackend {
  readonly name = 'mysql';
  /** Rows per batch UPDATE: 6 placeholders each, well inside max_allowed_packet. */
  readonly maxBatch = 500;
  private readonly guard = new ClosedGuard('mysql');
  /** literal quotes a string for a statement written out as text (sql.ts sqlLiteral). */
  private readonly literal = (s: string): string => sqlLiteral(s, (x) => this.pool.escape(x));

  constructor(private readonly pool: Pool, private readonly sql: MysqlStatements, private readonly options: MysqlBackendOptions) {}

  async get(key: string): Promise<BackendItem | null> {
    const rows = (await this.query('read', this.sql.get, [key])) as Row[];
    const row = rows[0];
    return row ? { key, value: text(row.v), version: String(row.version) } : null;
  }

  async create(key: string, value: string): Promise<string | null> {
    const version = newVersion();
    try {
      await this.query('insert', this.sql.insert, [key, value, version]);
      return version;
    } catch (err) {
      if (errno(err) === ER_DUP_ENTRY || errno(err) === ER_LOCK_DEADLOCK) return null;
      throw err;
    }
  }

  async replace(key: string, version: string, value: string): Promise<string | null> {
    const next = newVersion();
    try {
      const result = (await this.query('update', this.sql.update, [value, next, key, version])) as { affectedRows: number };
      return result.affectedRows === 1 ? next : null;
    } catch (err) {
      if (errno(err) === ER_LOCK_DEADLOCK) return null;
      throw err;
    }
  }

  async replaceMany(items: readonly ReplaceItem[]): Promise<(string | null)[]> {
    // One row per key per statement: a repeated key goes one by one.
    if (new Set(items.map((i) => i.key)).size !== items.length) return Promise.all(items.map((i) => this.replace(i.key, i.version, i.value)));
    if (items.length === 1) return [await this.replace(items[0]!.key, items[0]!.version, items[0]!.value)];
    const next = items.map(() => newVersion());
    const params: unknown[] = [];
    items.forEach((i) => params.push(i.key, i.value));
    items.forEach((i, j) => params.push(i.key, next[j]));
    items.forEach((i) => params.push(i.key, i.version));
    let affected: number;
    try {
      affected = ((await this.query('batch update', this.sql.updateMany(items.length), params)) as { affectedRows: number }).affectedRows;
    } catch (err) {
      if (errno(err) === ER_LOCK_DEADLOCK) return items.map(() => null);
      throw err;
    }
    if (affected === items.length) return next;
    // Some did not match: the rows now carrying our new versions are the ones that did.
    const rows = (await this.query('batch read', this.sql.versionsOf(items.length), items.map((i) => i.key))) as Row[];
    const now = new Map(rows.map((r) => [text(r.k), String(r.version)]));
    return items.map((i, j) => (now.get(i.key) === next[j] ? next[j]! : null));
  }

  async renewValues(items: readonly RevisionRenewal[]): Promise<(string | null)[]> {
    const out: (string | null)[] = new Array(items.length);
    // In lock order: two handles renewing the same leases (a leader and one that lost them) then
    // take the rows' locks in the same order, chunk by chunk, and one waits for the other instead
    // of deadlocking (in opposite orders InnoDB rolled both back, again and again, under load).
    const order = items.map((_, i) => i).sort((x, y) => (items[x]!.lock < items[y]!.lock ? -1 : items[x]!.lock > items[y]!.lock ? 1 : x - y));
    let next = 0;
    const worker = async () => {
      for (let start = next; start < items.length; start = next) {
        next = Math.min(start + RENEW_CHUNK, items.length);
        await this.renewChunk(items, order.slice(start, next), out);
      }
    };
    await Promise.all(Array.from({ length: Math.min(RENEW_IN_FLIGHT, Math.ceil(items.length / RENEW_CHUNK)) }, worker));
    return out;
  }

  /**
   * renewChunk renews the items at `ids` with one UPDATE (sql.ts renewValues) and puts each
   * answer in `out`. The new versions are drawn here, so a row that carries one afterwards was
   * renewed by this statement and by nothing else.
   */
  private async renewChunk(items: readonly RevisionRenewal[], ids: readonly number[], out: (string | null)[]): Promise<void> {
    const next = newVersions(ids.length);
    // Built as one text, with no object or array per lease: the batch lives while the statement is out.
    let rows = '';
    for (let j = 0; j < next.length; j++) {
      const item = items[ids[j]!]!;
      const renewedAt = Number.isFinite(item.renewedAt) ? String(Math.round(item.renewedAt)) : 'null';
      rows += renewRow(j, this.literal(leaseKey(item.lock)), this.literal(item.expected), next[j]!, renewedAt);
    }
    const statement = this.sql.renewValues(rows);
    // `[]`, not no values: an application pool with namedPlaceholders then skips scanning the
    // statement's text for `:name` placeholders (it has none).
    const send = async () => ((await this.query('batch renew', statement, [])) as { affectedRows: number }).affectedRows;
    let affected: number;
    try {
      affected = await send();
    } catch (err) {
      // Rolled back whole (an InnoDB deadlock, a Galera certification failure): nothing was
      // renewed, and that says nothing about most of the leases in it, so it is sent once more
      // (its versions were never committed). A second failure is an error — the electors retry
      // — not a lost race for every lease of the chunk, which would end each leadership.
      if (errno(err) !== ER_LOCK_DEADLOCK) throw err;
      affected = await send();
    }
    if (affected === next.length) {
      for (let j = 0; j < next.length; j++) out[ids[j]!] = next[j]!;
      return;
    }
    // Some did not match (lost, absent, or a lock named twice: its row is renewed once).
    const keys = ids.map((i) => leaseKey(items[i]!.lock));
    const current = (await this.query('batch read', this.sql.versionsOf(keys.length), keys)) as Row[];
    const now = new Map(current.map((r) => [text(r.k), String(r.version)]));
    for (let j = 0; j < next.length; j++) out[ids[j]!] = now.get(keys[j]!) === next[j] ? next[j]! : null;
  }

  async list(prefix: string, limit: number): Promise<BackendItem[]> {
    const rows = (await this.query('list', this.sql.list, [likePrefix(prefix), Math.min(limit, 2 ** 31 - 1)], this.options.timeoutMs * 5)) as Row[];
    return rows.map((r) => ({ key: text(r.k), value: text(r.v), version: String(r.version) }));
  }

  async remove(key: string, version: string): Promise<boolean> {
    try {
      return ((await this.query('remove', this.sql.removeAt, [key, version])) as { affectedRows: number }).affectedRows === 1;
    } catch (err) {
      if (errno(err) === ER_LOCK_DEADLOCK) return false;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.query('delete', this.sql.remove, [key]);
  }

  async close(): Promise<void> {
    if (!this.guard.close()) return;
    if (this.options.ownsPool) await this.pool.end().catch(() => {});
  }

  /** query runs one statement, bounded by the timeout, with any failure as one line of StoreUnavailableError. */
  private async query(what: string, sql: string, values?: unknown[], timeoutMs = this.options.timeoutMs): Promise<unknown> {
    this.guard.check();
    try {
      const [result] = await withTimeout('mysql', what, timeoutMs + 250, this.pool.query({ sql, values, timeout: timeoutMs }));
      return result;
    } catch (err) {
      throw mysqlError(err, `${this.options.label}: ${what}`);
    }
  }
}

/** text reads a VARBINARY/BLOB column (a Buffer) or a string as UTF-8 text. */
function text(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

function errno(err: unknown): number | undefined {
  const cause = (err as { cause?: unknown })?.cause ?? err;
  const n = (cause as { errno?: unknown })?.errno;
  return typeof n === 'number' ? n : undefined;
}

/** mysqlError turns a driver, socket or server error into StoreUnavailableError (cause kept for errno). */
export function mysqlError(err: unknown, where: string): Error {
  if (err instanceof StoreUnavailableError && !(err as { cause?: unknown }).cause) return err;
  if (err instanceof AggregateError && !err.message) {
    const inner = [...new Set(err.errors.map((e) => errorMessage(e) || (e as { code?: string }).code))].join('; ');
    return new StoreUnavailableError(`mysql: ${where}: ${oneLine(inner || 'connection failed')}`, { cause: err });
  }
  const e = err as { code?: unknown; errno?: unknown; sqlMessage?: unknown };
  let message = errorMessage(err) || (typeof e?.code === 'string' ? e.code : '') || 'unknown error';
  if (typeof e?.code === 'string' && typeof e.errno === 'number' && e.sqlMessage) message = `${e.sqlMessage} (${e.code} ${e.errno})`;
  return new StoreUnavailableError(`mysql: ${where}: ${oneLine(message)}`, { cause: err });
}
