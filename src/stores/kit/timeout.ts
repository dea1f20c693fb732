/** withTimeout bounds a call, so a frozen server cannot hang the elector past its deadline. */
import { StoreUnavailableError } from '../../core/errors.js';

/**
 * withTimeout resolves or rejects as `promise` does, or rejects with StoreUnavailableError
 * `<store>: <what> timed out after <ms> ms` first. `onTimeout` may abort the call underneath.
 */
export function withTimeout<T>(store: string, what: string, ms: number, promise: Promise<T>, onTimeout?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new StoreUnavailableError(`${store}: ${what} timed out after ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
