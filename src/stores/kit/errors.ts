/**
 * Error translation every store does the same way: an SDK's failure becomes one line of
 * StoreUnavailableError that names the store and where it is, with the original as `cause`.
 */
import { BatonError, StoreUnavailableError, errorMessage } from '../../core/errors.js';

/**
 * oneLine shortens and flattens a message so it prints as one line. An SDK's multi-line message
 * (a status line, then headers, a body, a stack) keeps its first line — and the next one when
 * the first ends with a colon — rather than being run together into one line of fragments.
 */
export function oneLine(text: string, max = 300): string {
  const lines = String(text)
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^at\s/.test(l));
  const kept = lines.length > 1 && lines[0]!.endsWith(':') ? `${lines[0]} ${lines[1]}` : (lines[0] ?? '');
  // eslint-disable-next-line no-control-regex
  const flat = kept.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim();
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
