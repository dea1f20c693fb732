/**
 * How large batches are cut up. One renewal round of 10,000 leases sent at once puts 10,000
 * keepalives and ~80 txns under deadlines that all start together; on a busy machine the last
 * answers come after those deadlines even though each part is quick. In chunks, with a few in
 * flight, each deadline starts when its own chunk is sent and bounds only that chunk's work.
 */

/** CHUNK is how many leases one chunk carries: four txns of etcd's default --max-txn-ops (128). */
export const CHUNK = 512;

/** IN_FLIGHT is how many chunks of one batch may be outstanding at once. */
export const IN_FLIGHT = 2;

/** ChunkOptions: slice size, slices in flight, and how many times one slice may be tried. */
export interface ChunkOptions {
  size?: number;
  inFlight?: number;
  /** Tries per slice (default 1). A slice is tried again only if `fn` can safely be repeated. */
  attempts?: number;
}

/**
 * inChunks runs `fn` over consecutive slices of `items` (at most `size` long), at most
 * `inFlight` at a time, and resolves with the results in `items` order; `fn` returns one result
 * per item of its slice. A slice that fails is tried again, after the others, up to `attempts`
 * times in all: one slow chunk out of twenty should not fail the other nineteen.
 *
 * Once a slice has failed for good, no further slice is started, and its failure is thrown once
 * the slices already running have settled — so the caller never hears of the failure while work
 * it started is still going on. A batch of one slice that is tried once is a single call to `fn`.
 */
export async function inChunks<T, R>(items: readonly T[], fn: (slice: readonly T[]) => Promise<readonly R[]>, options: ChunkOptions = {}): Promise<R[]> {
  const { size = CHUNK, inFlight = IN_FLIGHT, attempts = 1 } = options;
  if (items.length <= size && attempts <= 1) return [...(await fn(items))];
  const out = new Array<R>(items.length);
  const todo: { offset: number; tries: number }[] = [];
  for (let offset = 0; offset < items.length; offset += size) todo.push({ offset, tries: 0 });
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (!failure && next < todo.length) {
      const job = todo[next++]!;
      job.tries++;
      try {
        const results = await fn(items.slice(job.offset, job.offset + size));
        for (let i = 0; i < results.length; i++) out[job.offset + i] = results[i]!;
      } catch (err) {
        if (job.tries < attempts) todo.push(job);
        else failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(inFlight, todo.length)) }, worker));
  if (failure) throw failure.err;
  return out;
}
