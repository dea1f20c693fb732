/**
 * Fencing guards: make downstream writes reject a stale leader.
 *
 * A leader can be paused (GC, SIGSTOP, a slow disk) past its lease and wake up still
 * believing it leads. Its term — the fencing token, strictly increasing per lock — lets the
 * system it writes to refuse it. For PostgreSQL this module installs, idempotently:
 *
 *   CREATE TABLE baton_fences (resource text PRIMARY KEY, term bigint NOT NULL, updated_at timestamptz);
 *   FUNCTION baton_fence(resource text, term bigint) RETURNS bigint
 *
 * `baton_fence` raises the resource's recorded term to `term` (GREATEST), holding the row lock
 * until the transaction ends, and raises SQLSTATE BF001 if a newer term was recorded. Called
 * inside the same transaction as the guarded write, the pair is atomic: either the newest
 * term so far commits its write, or the transaction fails and the write is rolled back. Two
 * writers on one resource serialise on that row, so a stale one either commits before the
 * newer term's fence (and is ordered before it) or sees the newer term and fails.
 *
 * Any language can use it with plain SQL and `$BATON_TERM` (see docs/jobs.md):
 *
 *   BEGIN; SELECT baton_fence('billing-export', 42); UPDATE …; COMMIT;
 *
 * baton never imports `pg`: pass your own client or pool; only `query` (and `connect` /
 * `release` on a pool) are used.
 */
import { BatonError, InvalidConfigError } from '../core/errors.js';

/** Queryable is the part of a pg Client / PoolClient this module uses. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
}

/** PoolLike is the part of a pg Pool this module uses (a connection for one transaction). */
export interface PoolLike {
  connect(): Promise<Queryable & { release(err?: Error | boolean): void }>;
}

/** Fence names the resource a write touches and the writer's term. */
export interface Fence {
  /** What the term guards: use the lock's name, one resource per lock (terms are per lock). */
  readonly resource: string;
  /** The writer's fencing token (BATON_TERM, `elected.term`). */
  readonly term: number;
}

/** STALE_TERM_SQLSTATE is the error code baton_fence raises for a stale term. */
export const STALE_TERM_SQLSTATE = 'BF001';

/** StaleTermError: the write was refused because a newer term has written the resource (exit 75). */
export class StaleTermError extends BatonError {
  constructor(
    readonly resource: string,
    readonly term: number,
    message = `fence: term ${term} is stale for "${resource}"; a newer leader has written it`,
  ) {
    super(message);
  }
}

/** FENCE_SCHEMA_SQL is the idempotent DDL behind the guard, for migrations that prefer to own it. */
export const FENCE_SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS baton_fences (
  resource   text PRIMARY KEY,
  term       bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE OR REPLACE FUNCTION baton_fence(p_resource text, p_term bigint) RETURNS bigint
LANGUAGE plpgsql AS $baton$
DECLARE
  newest bigint;
BEGIN
  IF p_resource IS NULL OR p_term IS NULL OR p_term < 1 THEN
    RAISE EXCEPTION 'baton_fence: resource and a positive term are required' USING ERRCODE = '22023';
  END IF;
  -- Upsert keeps the highest term and locks the row until this transaction ends, so the check
  -- below and the caller's write commit or roll back together.
  INSERT INTO baton_fences AS f (resource, term) VALUES (p_resource, p_term)
  ON CONFLICT (resource) DO UPDATE
    SET term = GREATEST(f.term, EXCLUDED.term),
        updated_at = CASE WHEN EXCLUDED.term > f.term THEN now() ELSE f.updated_at END
  RETURNING f.term INTO newest;
  IF newest > p_term THEN
    RAISE EXCEPTION 'baton_fence: term % is stale for "%" (newest is %)', p_term, p_resource, newest
      USING ERRCODE = '${STALE_TERM_SQLSTATE}';
  END IF;
  RETURN newest;
END
$baton$;`;

/** A fixed advisory-lock key, so concurrent installers do not race on CREATE OR REPLACE FUNCTION. */
const INSTALL_LOCK_KEY = 0x6261746f6e; // "baton"

/**
 * ensureFenceSchema creates `baton_fences` and `baton_fence()` if needed. Idempotent and safe
 * to run from every instance at start-up (installers serialise on an advisory lock).
 */
export async function ensureFenceSchema(db: Queryable | PoolLike): Promise<void> {
  await inTransaction(db, async (c) => {
    await c.query('SELECT pg_advisory_xact_lock($1)', [INSTALL_LOCK_KEY]);
    await c.query(FENCE_SCHEMA_SQL);
  });
}

function validateFence(f: Fence): void {
  if (!f || typeof f.resource !== 'string' || f.resource === '') throw new InvalidConfigError('fence: a resource name is required');
  if (!Number.isSafeInteger(f.term) || f.term < 1) throw new InvalidConfigError(`fence: term must be a positive integer, got ${String(f?.term)}`);
}

/**
 * withFence runs `fn` inside one transaction that first calls baton_fence(resource, term):
 * everything `fn` writes commits only if no newer term has written the resource. Throws
 * StaleTermError (after rolling back) when the term is stale. Give a pool or a client that is
 * not already inside a transaction.
 */
export async function withFence<T>(db: Queryable | PoolLike, fence: Fence, fn: (client: Queryable) => Promise<T>): Promise<T> {
  validateFence(fence);
  return inTransaction(db, async (c) => {
    await c.query('SELECT baton_fence($1, $2)', [fence.resource, fence.term]);
    return fn(c);
  }, fence);
}

/** fencedQuery runs one statement under the fence (see withFence) and returns its result. */
export async function fencedQuery(db: Queryable | PoolLike, fence: Fence, sql: string, params: unknown[] = []): Promise<{ rows: any[]; rowCount: number | null }> {
  return withFence(db, fence, (c) => c.query(sql, params));
}

/** isStaleTermError tells a driver error raised by baton_fence for a stale term. */
export function isStaleTermError(err: unknown): boolean {
  return (err as { code?: unknown })?.code === STALE_TERM_SQLSTATE;
}

async function inTransaction<T>(db: Queryable | PoolLike, fn: (c: Queryable) => Promise<T>, fence?: Fence): Promise<T> {
  // A pg Pool has totalCount; a Client (which also has connect, to open its socket) does not.
  const pooled = 'totalCount' in db || !('query' in db);
  const client = pooled ? await (db as PoolLike).connect() : (db as Queryable);
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      if (fence && isStaleTermError(err)) throw new StaleTermError(fence.resource, fence.term, `fence: ${(err as Error).message}`);
      throw err;
    }
  } finally {
    if (pooled) (client as Queryable & { release(err?: Error | boolean): void }).release(broken);
  }
}
