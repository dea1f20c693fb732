/**
 * Waiting helpers for tests that talk to real servers: every wait has a bound and names what it
 * waited for when it runs out, so a hung test fails with a reason instead of at the runner's
 * timeout.
 */

/** sleep resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** waitFor polls `check` every 20 ms until it returns a truthy value, and returns it; fails after `ms`. */
export async function waitFor<T>(check: () => T | Promise<T>, ms: number, what: string): Promise<NonNullable<T>> {
  const end = performance.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (performance.now() > end) throw new Error(`timed out after ${ms}ms waiting for ${what}`);
    await sleep(20);
  }
}

/** within fails, naming `what`, if `p` takes longer than `ms`. */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms waiting for ${what}`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
