/**
 * A queue store may claim a front entry with no round trip (CampaignResult.leaseAgeMs, e.g. etcd
 * on the delete event): the elector must count its deadline from the refresh the store names —
 * not from the call — renew at once, and never lead on a claim whose
 * refresh is already past the renew deadline. A scripted queue store on the fake clock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderElector } from '../../src/core/elector.js';
import type { CampaignOptions, CampaignResult, LeaseRecord, LeaseStore, LeaseWrite, WriteResult } from '../../src/core/store.js';
import { FakeClock, settle } from '../../src/testing/fake-clock.js';

const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 700, retryPeriodMs: 200, jitterFactor: 1.2 };

/** scriptedQueue answers the first campaign `ok` with `leaseAgeMs`, later ones "waiting", and records every call. */
function scriptedQueue(leaseAgeMs: number) {
  const calls: string[] = [];
  const options: (CampaignOptions | undefined)[] = [];
  let revision = 0;
  const recordOf = (next: LeaseWrite): LeaseRecord =>
    Object.freeze({ lock: 'q', holder: next.holder, term: 7, leaseDurationMs: next.leaseDurationMs, acquiredAt: next.acquiredAt, renewedAt: next.renewedAt, transitions: next.transitions, stepDownRequested: false, metadata: next.metadata, revision: `7:${++revision}` });
  const store: LeaseStore = {
    kind: 'scripted',
    capabilities: { serverExpiry: true },
    read: async () => null,
    write: async (_lock: string, _expected: string | null, next: LeaseWrite): Promise<WriteResult> => {
      calls.push(next.holder === null ? 'release' : 'renew');
      return { ok: true, record: recordOf(next) };
    },
    queue: {
      campaign: async (_lock: string, next: LeaseWrite, o?: CampaignOptions): Promise<CampaignResult> => {
        calls.push('campaign');
        options.push(o);
        if (options.length > 1) return { ok: false, current: null };
        return { ok: true, record: recordOf(next), leaseAgeMs };
      },
      withdraw: async () => {},
    },
    close: async () => {},
  };
  return { store, calls, options };
}

test('a claim with no round trip: the deadline counts from the refresh the store names, and the elector renews at once', async () => {
  const clock = new FakeClock();
  await clock.advance(5_000);
  const { store, calls, options } = scriptedQueue(300);
  const e = new LeaderElector({ store, lock: 'q', identity: 'a', clock, ...TIMING });
  e.start();
  const won = await e.elected();
  const now = clock.monotonicMs();
  const w = e.leadershipWindow()!;
  assert.equal(w.renewStartMs, now - 300, 'anchored 300 ms before the answer, not at the call');
  assert.equal(won.deadlineMs, now - 300 + TIMING.renewDeadlineMs);
  assert.deepEqual(options[0], { claimWithinMs: TIMING.renewDeadlineMs - TIMING.retryPeriodMs, renewDeadlineMs: TIMING.renewDeadlineMs });
  await settle();
  assert.deepEqual(calls, ['campaign', 'renew'], 'renewed at once, with no timer');
  await e.stop();
});

test('a claim whose refresh is already past the renew deadline is not led on, and is handed back', async () => {
  const clock = new FakeClock();
  await clock.advance(5_000);
  const { store, calls } = scriptedQueue(TIMING.renewDeadlineMs);
  const e = new LeaderElector({ store, lock: 'q', identity: 'a', clock, ...TIMING });
  let elected = 0;
  e.on('elected', () => elected++);
  e.start();
  await settle();
  await clock.advance(1);
  assert.equal(elected, 0);
  assert.equal(e.isLeader(), false);
  assert.equal(calls[0], 'campaign');
  assert.ok(calls.includes('release'), 'the entry it may not lead on is released');
  await e.stop();
});
