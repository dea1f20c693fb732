/**
 * Error translation every store does the same way: an SDK's failure becomes one line of
 * StoreUnavailableError that names the store and where it is, with the original as `cause`.
 */
import { BatonError, StoreUnavailableError, errorMessage } from '../../core/errors.js';

/** oneLine shortens and flattens a message so it prints as one line. */
export function oneLine(text: string, max = 300): string {
  // eslint-disable-next-line no-control-regex
  const flat = String(text).replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * unavailable wraps any failure as StoreUnavailableError `<store>: <where>: <message>`; a
 * BatonError (already translated, or a config error) passes through unchanged.
 */
export function unavailable(store: string, err: unknown, where?: string): BatonError {
  if (err instanceof BatonError) return err;
  const text = oneLine(errorMessage(err)) || 'unknown error';
  return new StoreUnavailableError(`${store}: ${where ? `${where}: ` : ''}${text}`, { cause: err });
}

/** translated runs `call` and rethrows any failure through `unavailable`. */
export async function translated<T>(store: string, where: string | undefined, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw unavailable(store, err, where);
  }
}
