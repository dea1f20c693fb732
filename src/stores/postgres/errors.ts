/**
 * Translation of node-postgres failures into baton's typed errors: every error leaving this
 * folder is a StoreUnavailableError (or StoreClosedError), with a one-line message that names
 * the server but never the password.
 */
import { StoreUnavailableError, errorMessage } from '../../core/errors.js';

/** SQLSTATEs after which the same statement, sent again, is expected to succeed. */
const RETRYABLE = new Set([
  '40001', // serialization_failure: a database whose default isolation is above READ COMMITTED
  '40P01', // deadlock_detected
]);

/** UNDEFINED_TABLE: someone dropped baton's tables; they are created again on the next call. */
export const UNDEFINED_TABLE = '42P01';

/** sqlState returns the SQLSTATE of a server error, if `err` is one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** isRetryable tells whether resending the statement is the right answer to `err`. */
export function isRetryable(err: unknown): boolean {
  const state = sqlState(err);
  return state !== undefined && RETRYABLE.has(state);
}

/** describePgError renders any driver, socket or server error on one line. */
export function describePgError(err: unknown): string {
  // A refused dual-stack connect is an AggregateError whose own message is empty.
  if (err instanceof AggregateError && !err.message) {
    return [...new Set(err.errors.map((e) => describePgError(e)))].join('; ') || 'connection failed';
  }
  let text = errorMessage(err);
  const e = err as { code?: unknown; address?: unknown; port?: unknown } | null;
  if (!text && typeof e?.code === 'string') text = e.code;
  if (text === 'Query read timeout') text = 'no answer within the query timeout';
  // PgBouncer refuses statement_timeout as a startup parameter unless configured to ignore it.
  if (/unsupported startup parameter: statement_timeout/.test(text)) text += ' — behind a pooler, add statement_timeout=0 to the store URL';
  const state = sqlState(err);
  return state ? `${text} (SQLSTATE ${state})` : text || 'unknown error';
}

/** unavailable wraps `err` as a StoreUnavailableError about `where` (host:port/db). */
export function unavailable(err: unknown, where: string): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err;
  return new StoreUnavailableError(`postgres: ${where}: ${describePgError(err)}`, { cause: err });
}
