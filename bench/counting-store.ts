/**
 * countingStore wraps a LeaseStore and counts the calls made into it — the in-process stand-in
 * for server counters where there is no server (SQLite), and the way "round trips" are told
 * apart from "requests" (one `renewMany` is one round trip carrying many renewals).
 */
import type { LeaseStore, RenewRequest } from '../src/core/store.js';

/** StoreCalls counts calls by method; `renewMany` counts renewRevisions calls too, `renewItems` the leases both carried. */
export interface StoreCalls {
  read: number;
  write: number;
  renewMany: number;
  renewItems: number;
  list: number;
  watch: number;
}

/** totalCalls is every call that reaches the store (each read, write, renewMany, list). */
export function totalCalls(c: StoreCalls): number {
  return c.read + c.write + c.renewMany + c.list;
}

/** CountingStore is a wrapped store plus its live call counts. */
export interface CountingStore {
  readonly store: LeaseStore;
  readonly calls: StoreCalls;
  /** snapshot copies the counts. */
  snapshot(): StoreCalls;
}

/** countingStore returns a store that behaves like `inner` and counts every call made to it. */
export function countingStore(inner: LeaseStore): CountingStore {
  const calls: StoreCalls = { read: 0, write: 0, renewMany: 0, renewItems: 0, list: 0, watch: 0 };
  const store: LeaseStore = {
    kind: inner.kind,
    capabilities: inner.capabilities,
    ledger: inner.ledger,
    presence: inner.presence,
    read(lock) {
      calls.read++;
      return inner.read(lock);
    },
    write(lock, expected, next) {
      calls.write++;
      return inner.write(lock, expected, next);
    },
    renewMany: inner.renewMany
      ? (requests: readonly RenewRequest[]) => {
          calls.renewMany++;
          calls.renewItems += requests.length;
          return inner.renewMany!(requests);
        }
      : undefined,
    // A renewal-only batch is one round trip carrying many renewals, like renewMany: it is
    // counted as one, so round trips per cycle compare across the change.
    renewRevisions: inner.renewRevisions
      ? (items) => {
          calls.renewMany++;
          calls.renewItems += items.length;
          return inner.renewRevisions!(items);
        }
      : undefined,
    watch: inner.watch
      ? (lock, listener) => {
          calls.watch++;
          return inner.watch!(lock, listener);
        }
      : undefined,
    list: inner.list
      ? () => {
          calls.list++;
          return inner.list!();
        }
      : undefined,
    // A queue store's campaign puts the candidate's entry (or reads where it stands) and a
    // withdrawal deletes it: each is counted as a write, as campaigns were before they had a verb.
    queue: inner.queue && {
      campaign: (lock, candidate) => {
        calls.write++;
        return inner.queue!.campaign(lock, candidate);
      },
      withdraw: (lock, holder) => {
        calls.write++;
        return inner.queue!.withdraw(lock, holder);
      },
    },
    // The feed's state is read live from the inner store: a copy taken here would freeze it, and
    // a wrapper without these getters makes every standby behind it poll as if the feed reported
    // no expiries (which is what the idle bench counted until 2026-11-24: one read per lease + retry).
    get watchLive() {
      return inner.watchLive;
    },
    get watchSeesExpiry() {
      return inner.watchSeesExpiry;
    },
    get watchSeesRenewals() {
      return inner.watchSeesRenewals;
    },
    close: () => inner.close(),
  };
  return { store, calls, snapshot: () => ({ ...calls }) };
}

/** diffCalls is `b − a` per method. */
export function diffCalls(a: StoreCalls, b: StoreCalls): StoreCalls {
  return {
    read: b.read - a.read,
    write: b.write - a.write,
    renewMany: b.renewMany - a.renewMany,
    renewItems: b.renewItems - a.renewItems,
    list: b.list - a.list,
    watch: b.watch - a.watch,
  };
}
