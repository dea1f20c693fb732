/**
 * The register's log replayed independently of the register: the register enforces "not older
 * than the newest", and this checks both that it did and what it cannot see — the same token
 * accepted from two processes, which only a reused term can cause. Each key (shard) is a
 * register of its own.
 */
import type { RegisterEvent } from './events.js';

/** StaleWrite is a run of accepted writes that should not have been accepted. */
export interface StaleWrite {
  token: number;
  from: string;
  newest: number;
  newestFrom: string;
  t: number;
  n: number;
}

/** replayRegister counts accepted, accepted-but-stale and rejected writes. */
export function replayRegister(log: readonly RegisterEvent[]): {
  acceptedWrites: number;
  acceptedStaleWrites: number;
  rejectedStaleWrites: number;
  stale: StaleWrite[];
} {
  const newestOf = new Map<string, { token: number; from: string }>();
  let acceptedWrites = 0;
  let acceptedStaleWrites = 0;
  let rejectedStaleWrites = 0;
  const stale: StaleWrite[] = [];
  for (const e of log) {
    if (e.ev === 'rejected') {
      rejectedStaleWrites++;
      continue;
    }
    acceptedWrites += e.n;
    const newest = newestOf.get(e.key ?? '') ?? { token: -1, from: '' };
    if (e.token < newest.token || (e.token === newest.token && e.from !== newest.from)) {
      acceptedStaleWrites += e.n;
      stale.push({ token: e.token, from: e.from, newest: newest.token, newestFrom: newest.from, t: e.t0, n: e.n });
    } else {
      newestOf.set(e.key ?? '', { token: e.token, from: e.from });
    }
  }
  return { acceptedWrites, acceptedStaleWrites, rejectedStaleWrites, stale };
}
