/**
 * The observation rule, written once. Something another process keeps alive — a lease record,
 * a shard member's heartbeat, a candidate's registry entry, a task lock's hold — is judged gone
 * only by this process's own observation: its version stayed the same for long enough, timed on
 * this process's monotonic clock from the moment this process first saw that version. Never from
 * a time another host wrote, never from a wall clock, so clocks need not agree.
 *
 * A Sighting is one such observation; Sightings keeps one per key. The elector (rule 2, with
 * core/claim-decision.ts), shard membership (shards/membership.ts), the candidate registry's
 * liveness and pruning (core/candidates.ts) and the task lock (jobs/task-lock.ts, which keeps its
 * sightings in the lock's entry, one per host) all judge by it.
 */

/** Sighting: `version` has been seen unchanged since monotonic `sinceMs`. */
export interface Sighting {
  readonly version: string;
  readonly sinceMs: number;
}

/** sight is the sighting of `version` at monotonic `nowMs`: `prev` continued when the version is the same, else a new one. */
export function sight(prev: Sighting | undefined, version: string, nowMs: number): Sighting {
  return prev !== undefined && prev.version === version ? prev : { version, sinceMs: nowMs };
}

/** unchangedForMs is how long, at monotonic `nowMs`, the sighting's version has been seen unchanged. */
export function unchangedForMs(s: Pick<Sighting, 'sinceMs'>, nowMs: number): number {
  return nowMs - s.sinceMs;
}

/** Sightings keeps a sighting per key (a member, a candidate). */
export class Sightings {
  private readonly byKey = new Map<string, Sighting>();

  /** see records `key` at `version` at `nowMs`; returns its sighting. */
  see(key: string, version: string, nowMs: number): Sighting {
    const s = sight(this.byKey.get(key), version, nowMs);
    this.byKey.set(key, s);
    return s;
  }

  get(key: string): Sighting | undefined {
    return this.byKey.get(key);
  }

  /** keepOnly forgets every key not in `present` (gone from the listing: nothing left to time). */
  keepOnly(present: ReadonlySet<string>): void {
    for (const key of [...this.byKey.keys()]) if (!present.has(key)) this.byKey.delete(key);
  }

  /**
   * restartAll counts every key as first seen at `nowMs`: after this process stopped looking for
   * a while (a store outage, a pause), "unchanged" over that stretch proves nothing.
   */
  restartAll(nowMs: number): void {
    for (const [key, s] of this.byKey) this.byKey.set(key, { version: s.version, sinceMs: nowMs });
  }
}
