/**
 * The SQL the PostgreSQL store sends: schema creation and one statement per operation. Every
 * operation is a single statement (its own implicit transaction), so it behaves the same through
 * a transaction-mode pooler; none relies on session state. Statements are plain parameterised
 * queries (no named prepared statements) for the same reason.
 *
 * Shape shared by the writes: `cur` reads the row (locking it where a row must exist), the
 * data-modifying CTEs do the conditional write, and the final SELECT returns either
 * `(ok = true, new row)` — sending NOTIFY with the new row — or `(ok = false, current row)`,
 * so a lost race costs no second round trip.
 */
import { digitsEnd, flat, integerEnd, integerValue, renewedAs } from '../kit/renewal-text.js';
import type { LeaseRecord } from '../../core/store.js';

/** Names are validated identifiers (config.ts); quoting keeps them exact. */
const q = (name: string) => `"${name}"`;
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** The record's columns, in table order. */
const COLUMNS = ['lock', 'holder', 'term', 'lease_ms', 'acquired_at', 'renewed_at', 'transitions', 'step_down', 'metadata', 'revision'] as const;
const cols = (alias: string) => COLUMNS.map((c) => `${alias}.${c}`).join(', ');
const outCols = (alias: string) => COLUMNS.map((c) => (c === 'revision' ? `${alias}.revision::text AS revision` : `${alias}.${c}`)).join(', ');

/** MAX_PAYLOAD_BYTES: NOTIFY payloads must stay under 8000 bytes; a bigger record is announced by lock and revision only. */
export const MAX_PAYLOAD_BYTES = 7900;

/** LeaseRow is a lease row as node-postgres returns it (int8 as strings, json parsed). */
export interface LeaseRow {
  lock: string;
  holder: string | null;
  term: string | number;
  lease_ms: string | number;
  acquired_at: string | number;
  renewed_at: string | number;
  transitions: string | number;
  step_down: boolean;
  metadata: unknown;
  revision: string;
}

/** toRecord turns a row (or a NOTIFY payload of the same shape) into a frozen LeaseRecord. */
export function toRecord(row: LeaseRow): LeaseRecord {
  const metadata = row.metadata && typeof row.metadata === 'object' && !Array.isArray(row.metadata) ? row.metadata : {};
  return Object.freeze({
    lock: row.lock,
    holder: row.holder ?? null,
    term: Number(row.term),
    leaseDurationMs: Number(row.lease_ms),
    acquiredAt: Number(row.acquired_at),
    renewedAt: Number(row.renewed_at),
    transitions: Number(row.transitions),
    stepDownRequested: row.step_down === true,
    metadata: Object.freeze({ ...(metadata as Record<string, unknown>) }),
    revision: String(row.revision),
  });
}

/**
 * PayloadDecoder decodes the NOTIFY payloads of one lock, keeping the last record it decoded to
 * read the next renewal without parsing. A renewal changes two things in a row: `renewed_at`
 * and `revision`. When a payload's text outside those two values is the same as the last
 * payload's (compared as text), its record is the last one with them replaced: exactly what
 * toRecord of the parsed payload would be, without JSON.parse and two new frozen objects. A
 * process leading 10,000 locks hears each of its own 10,000 renewals every cycle. Anything else
 * (another holder or term, the step-down flag, other metadata) differs outside the two values
 * and is parsed in full.
 */
export class PayloadDecoder {
  private head = '';
  private mid = '';
  private last?: LeaseRecord;

  /** decode returns the payload's record, or undefined when it is not a full record (see cutPayload). */
  decode(payload: string): LeaseRecord | undefined {
    const last = this.last;
    const start = this.head.length;
    if (last && payload.slice(0, start) === this.head) {
      // Quick match: head renewed_at mid revision `"}`, with head and mid the last payload's. Its
      // cut would find the same pieces (head and mid come from a payload that cutPayload cut).
      // Compared with ===, which is memcmp for flat strings (startsWith is far slower).
      const end = integerEnd(payload, start);
      const revStart = end + this.mid.length;
      if (end > start && payload.slice(end, revStart) === this.mid) {
        if (revStart < payload.length - 2 && digitsEnd(payload, revStart) === payload.length - 2 && payload.endsWith('"}')) {
          return (this.last = renewedAs(last, integerValue(payload, start, end), payload.slice(revStart, payload.length - 2)));
        }
      }
    }
    const cut = cutPayload(payload);
    let record: LeaseRecord | undefined;
    try {
      record = cut && toRecord(JSON.parse(payload) as LeaseRow);
    } catch {
      // not ours
    }
    this.head = flat(cut?.head ?? '');
    this.mid = flat(cut?.mid ?? '');
    this.last = record;
    return record;
  }
}

/**
 * payloadLock is the lock a full payload names (`{"lock" : "…", …`), if it has no escapes;
 * undefined otherwise (a `{lock, revision}` payload also gives its lock).
 */
export function payloadLock(m: string): string | undefined {
  if (m.slice(0, LOCK_KEY.length) !== LOCK_KEY) return undefined; // (a short slice is a flat copy: faster than startsWith)
  const p = m.indexOf('"', LOCK_KEY.length);
  const lock = p < 0 ? '' : m.slice(LOCK_KEY.length, p);
  return p < 0 || lock.includes('\\') ? undefined : lock;
}

/** PayloadCut is a full payload cut around the two values a renewal changes. */
export interface PayloadCut {
  lock: string;
  revision: string;
  renewedAt: number;
  /** The text before the renewed_at value, and from after it to the revision's value. */
  head: string;
  mid: string;
}

const Q = 34; // "
const BACKSLASH = 92;
const LOCK_KEY = '{"lock" : "';
const HOLDER_KEY = ', "holder" : ';
const NEXT_KEYS = [', "term" : ', ', "lease_ms" : ', ', "acquired_at" : ', ', "renewed_at" : '] as const;
const TRANSITIONS_KEY = ', "transitions" : ';
const REVISION_KEY = ', "revision" : "';

/**
 * cutPayload finds the lock, `renewed_at` and `revision` of a full payload as json_build_object
 * writes it (`{"lock" : "…", "holder" : …, "term" : …, "lease_ms" : …, "acquired_at" : …,
 * "renewed_at" : …, "transitions" : …, "step_down" : …, "metadata" : …, "revision" : "…"}`), or
 * returns undefined: a `{lock, revision}` payload, a lock or holder with escapes that would need
 * decoding, any other shape. The keys up to `renewed_at` are found by position, never by
 * searching the holder; `revision` is the last key, after the metadata.
 */
export function cutPayload(m: string): PayloadCut | undefined {
  if (!m.startsWith(LOCK_KEY)) return undefined;
  let p = m.indexOf('"', LOCK_KEY.length);
  if (p < 0) return undefined;
  const lock = m.slice(LOCK_KEY.length, p);
  if (lock.includes('\\')) return undefined;
  p++;
  if (!m.startsWith(HOLDER_KEY, p)) return undefined;
  p += HOLDER_KEY.length;
  if (m.startsWith('null', p)) p += 4;
  else if (m.charCodeAt(p) === Q) {
    // A JSON string, escapes skipped, up to its closing quote.
    for (p++; p < m.length && m.charCodeAt(p) !== Q; p += m.charCodeAt(p) === BACKSLASH ? 2 : 1);
    p++;
  } else return undefined;
  // Numbers hold no comma: each key after the holder starts at the next one.
  for (let k = 0; k < NEXT_KEYS.length; k++) {
    if (k > 0) p = m.indexOf(',', p);
    if (p < 0 || !m.startsWith(NEXT_KEYS[k]!, p)) return undefined;
    p += NEXT_KEYS[k]!.length;
  }
  const start = p;
  const end = integerEnd(m, start);
  if (end === start || !m.startsWith(TRANSITIONS_KEY, end) || !m.endsWith('"}')) return undefined;
  const rev = m.lastIndexOf(REVISION_KEY);
  const revStart = rev + REVISION_KEY.length;
  if (rev < end || revStart === m.length - 2 || digitsEnd(m, revStart) !== m.length - 2) return undefined;
  return { lock, revision: m.slice(revStart, m.length - 2), renewedAt: Number(m.slice(start, end)), head: m.slice(0, start), mid: m.slice(end, revStart) };
}

/** PostgresNames: every table is named after the lease table; the fields are quoted, qualified names for SQL. */
export class PostgresNames {
  readonly leases: string;
  readonly terms: string;
  readonly ledger: string;
  readonly revisions: string;
  /** Unquoted, for to_regclass and messages. */
  readonly plain: { leases: string; terms: string; ledger: string; revisions: string };

  constructor(readonly schema: string, readonly table: string) {
    const name = (suffix: string) => `${q(schema)}.${q(table + suffix)}`;
    this.leases = name('');
    this.terms = name('_terms');
    this.ledger = name('_ledger');
    this.revisions = name('_revision');
    const plain = (suffix: string) => `${schema}.${table}${suffix}`;
    this.plain = { leases: plain(''), terms: plain('_terms'), ledger: plain('_ledger'), revisions: plain('_revision') };
  }

  /** The NOTIFY channel: the qualified table name, so stores on other tables never hear each other. */
  get channel(): string {
    return this.plain.leases;
  }
}

/**
 * schemaDdl creates everything idempotently. `fillfactor` leaves room on each page so renewals,
 * which change no indexed column, are HOT updates.
 */
export function schemaDdl(n: PostgresNames, createSchema: boolean): string[] {
  return [
    ...(createSchema ? [`CREATE SCHEMA IF NOT EXISTS ${q(n.schema)}`] : []),
    `CREATE TABLE IF NOT EXISTS ${n.leases} (
      lock        text COLLATE "C" PRIMARY KEY,
      holder      text,
      term        bigint  NOT NULL,
      lease_ms    bigint  NOT NULL,
      acquired_at bigint  NOT NULL,
      renewed_at  bigint  NOT NULL,
      transitions bigint  NOT NULL,
      step_down   boolean NOT NULL,
      metadata    json    NOT NULL,
      revision    bigint  NOT NULL
    ) WITH (fillfactor = 50)`,
    `CREATE TABLE IF NOT EXISTS ${n.terms} (lock text COLLATE "C" PRIMARY KEY, term bigint NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${n.ledger} (key text COLLATE "C" PRIMARY KEY, value text NOT NULL, version bigint NOT NULL)`,
    `CREATE SEQUENCE IF NOT EXISTS ${n.revisions}`,
  ];
}

/** The payload sent with NOTIFY: the row as JSON, or `{lock, revision}` when that would be too big. */
function payload(alias: string): string {
  const full = `json_build_object('lock', ${alias}.lock, 'holder', ${alias}.holder, 'term', ${alias}.term, 'lease_ms', ${alias}.lease_ms,
    'acquired_at', ${alias}.acquired_at, 'renewed_at', ${alias}.renewed_at, 'transitions', ${alias}.transitions,
    'step_down', ${alias}.step_down, 'metadata', ${alias}.metadata, 'revision', ${alias}.revision::text)::text`;
  return `CASE WHEN octet_length(${full}) <= ${MAX_PAYLOAD_BYTES} THEN ${full}
    ELSE json_build_object('lock', ${alias}.lock, 'revision', ${alias}.revision::text)::text END`;
}

/**
 * The new values of a write. Parameters of `update` and `create`: $1 lock, $2 expected revision,
 * $3 holder, $4 newTerm, $5 lease_ms, $6 acquired_at, $7 renewed_at, $8 transitions,
 * $9 step_down, $10 metadata (JSON text).
 */
const NEW_VALUES = `$3::text, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::boolean, $10::json`;

/** PostgresStatements holds every statement text for one set of names. */
export class PostgresStatements {
  readonly read: string;
  readonly list: string;
  /** Compare-and-set on the revision ($2 not null). */
  readonly update: string;
  /** Create-if-absent ($2 null). */
  readonly create: string;
  readonly renewMany: string;
  /** The renewal-only batch: revisions in, revisions out, each renewed row still NOTIFYing. */
  readonly renewRevisions: string;
  readonly ledgerGet: string;
  readonly ledgerCreate: string;
  readonly ledgerUpdate: string;
  readonly ledgerList: string;
  readonly ledgerRemove: string;

  constructor(n: PostgresNames) {
    const nextRevision = `nextval(${literal(n.plain.revisions)}::regclass)`;
    const notify = (alias: string) => `pg_notify(${literal(n.channel)}, ${payload(alias)})::text AS notified`;
    // Returns the new row and notifies, or returns what the statement saw instead.
    const finish = `
      SELECT true AS ok, ${outCols('up')}, ${notify('up')} FROM up
      UNION ALL
      SELECT false, ${outCols('cur')}, NULL FROM cur WHERE NOT EXISTS (SELECT 1 FROM up)`;

    this.read = `SELECT ${outCols('l')} FROM ${n.leases} AS l WHERE l.lock = $1::text`;
    this.list = `SELECT ${outCols('l')} FROM ${n.leases} AS l ORDER BY l.lock`;

    // FOR UPDATE waits for a concurrent writer and then yields the latest row, locked: the
    // comparison below is made on the row the UPDATE will change, and `cur` is the true current
    // row when the comparison fails. The term counter is bumped only once the write is certain
    // (we hold the row and its revision matches), so a lost race never consumes a term.
    this.update = `
      WITH cur AS (
        SELECT ${cols('l')} FROM ${n.leases} AS l WHERE l.lock = $1::text FOR UPDATE
      ), won AS (
        SELECT lock, term FROM cur WHERE revision = $2::bigint
      ), bump AS (
        INSERT INTO ${n.terms} AS c (lock, term) SELECT lock, term + 1 FROM won WHERE $4::boolean
        ON CONFLICT (lock) DO UPDATE SET term = greatest(c.term + 1, excluded.term)
        RETURNING c.term
      ), up AS (
        UPDATE ${n.leases} AS l SET (holder, lease_ms, acquired_at, renewed_at, transitions, step_down, metadata) = (${NEW_VALUES}),
          term = coalesce((SELECT term FROM bump), won.term), revision = ${nextRevision}
        FROM won WHERE l.lock = won.lock
        RETURNING ${cols('l')}
      )${finish}`;

    // There is no row to lock, so the counter row serialises creators: the upsert waits for a
    // concurrent creator and then sees its committed count. A creator that loses the insert
    // after that has still advanced the counter — a skipped number, never a reused one.
    this.create = `
      WITH cur AS (
        SELECT ${cols('l')} FROM ${n.leases} AS l WHERE l.lock = $1::text
      ), bump AS (
        INSERT INTO ${n.terms} AS c (lock, term)
        SELECT $1::text, CASE WHEN $4::boolean THEN 1 ELSE 0 END WHERE NOT EXISTS (SELECT 1 FROM cur) AND $2::bigint IS NULL
        ON CONFLICT (lock) DO UPDATE SET term = c.term + excluded.term
        RETURNING c.lock, c.term
      ), up AS (
        INSERT INTO ${n.leases} AS l (${COLUMNS.join(', ')})
        SELECT b.lock, $3::text, b.term, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::boolean, $10::json, ${nextRevision}
        FROM bump AS b
        ON CONFLICT (lock) DO NOTHING
        RETURNING ${cols('l')}
      )${finish}`;

    // One statement for N renewals. Rows are locked in lock order so two batches never deadlock;
    // each item succeeds or fails on its own and is reported by its position `i`.
    this.renewMany = `
      WITH req AS (
        SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::boolean[], $9::text[])
          WITH ORDINALITY AS r(lock, expected, holder, lease_ms, acquired_at, renewed_at, transitions, step_down, metadata, i)
      ), cur AS (
        SELECT ${cols('l')} FROM ${n.leases} AS l WHERE l.lock = ANY($1::text[]) ORDER BY l.lock FOR UPDATE
      ), up AS (
        UPDATE ${n.leases} AS l SET holder = req.holder, lease_ms = req.lease_ms, acquired_at = req.acquired_at, renewed_at = req.renewed_at,
          transitions = req.transitions, step_down = req.step_down, metadata = req.metadata::json, revision = ${nextRevision}
        FROM req JOIN cur ON cur.lock = req.lock AND cur.revision = req.expected
        WHERE l.lock = cur.lock
        RETURNING req.i, ${cols('l')}
      )
      SELECT up.i, true AS ok, ${outCols('up')}, ${notify('up')} FROM up
      UNION ALL
      SELECT req.i, false, ${outCols('cur')}, NULL FROM req LEFT JOIN cur ON cur.lock = req.lock
      WHERE NOT EXISTS (SELECT 1 FROM up WHERE up.i = req.i)`;

    // renewMany for a renewal that changes nothing but renewed_at: $1 locks, $2 expected
    // revisions, $3 renewed_at. Only new revisions come back (lost items are absent). The NOTIFY
    // stays, with the whole row as before: standbys in other processes time a lease's expiry from
    // the renewals they hear of, and the server builds the payload from the row it wrote. A lock
    // named twice is renewed once, for its first item (the second compares on a gone revision).
    this.renewRevisions = `
      WITH req AS (
        SELECT DISTINCT ON (r.lock) r.* FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS r(lock, expected, renewed_at, i)
        ORDER BY r.lock, r.i
      ), cur AS (
        SELECT l.lock, l.revision FROM ${n.leases} AS l WHERE l.lock = ANY($1::text[]) ORDER BY l.lock FOR UPDATE
      ), up AS (
        UPDATE ${n.leases} AS l SET renewed_at = req.renewed_at, revision = ${nextRevision}
        FROM req JOIN cur ON cur.lock = req.lock AND cur.revision = req.expected
        WHERE l.lock = cur.lock
        RETURNING req.i, ${cols('l')}
      )
      SELECT up.i, up.revision::text AS revision, ${notify('up')} FROM up`;

    this.ledgerGet = `SELECT key, value, version::text AS version FROM ${n.ledger} WHERE key = $1::text`;
    const ledgerFinish = `
      SELECT true AS ok, key, value, version::text AS version FROM up
      UNION ALL
      SELECT false, key, value, version::text FROM cur WHERE NOT EXISTS (SELECT 1 FROM up)`;
    this.ledgerCreate = `
      WITH cur AS (
        SELECT key, value, version FROM ${n.ledger} WHERE key = $1::text
      ), up AS (
        INSERT INTO ${n.ledger} (key, value, version) SELECT $1::text, $3::text, ${nextRevision}
        WHERE NOT EXISTS (SELECT 1 FROM cur) AND $2::bigint IS NULL
        ON CONFLICT (key) DO NOTHING
        RETURNING key, value, version
      )${ledgerFinish}`;
    this.ledgerUpdate = `
      WITH cur AS (
        SELECT key, value, version FROM ${n.ledger} WHERE key = $1::text FOR UPDATE
      ), up AS (
        UPDATE ${n.ledger} AS e SET value = $3::text, version = ${nextRevision}
        FROM cur WHERE e.key = cur.key AND cur.version = $2::bigint
        RETURNING e.key, e.value, e.version
      )${ledgerFinish}`;
    // The "C" collation makes `key >= prefix` an index range in byte order.
    this.ledgerList = `SELECT key, value, version::text AS version FROM ${n.ledger}
      WHERE key >= $1::text AND starts_with(key, $1::text) ORDER BY key LIMIT $2::int`;
    // Versions come from the revision sequence, so a key made again never repeats an old one.
    this.ledgerRemove = `DELETE FROM ${n.ledger} WHERE key = $1::text AND version = $2::bigint RETURNING key`;
  }
}
