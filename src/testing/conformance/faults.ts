import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LeaseRecord, LeaseStore } from '../../core/store.js';
import { Candidates, faultTiming } from './candidates.js';
import { Handles, acquire, acquireWrite, faultsOf, uniqueLock, waitFor, type ConformanceOptions, runnerOf } from './context.js';

/**
 * faultTests registers the fault scenarios whose hooks `o.faults` gives, each with real
 * electors (two candidates, each on its own handle) on short leases scaled from `minLeaseMs`.
 * In every scenario leaderships never overlap, terms only grow, and nothing escapes as an
 * uncaught exception or unhandled rejection:
 * - `kill`/`start`: the leader steps down by its own renew deadline; nobody leads while the
 *   server is down; after the start a leader is elected with a higher term.
 * - `restart`: a leader leads again after the restart.
 * - `freeze`/`thaw`: frozen past the lease, the leader steps down by its own deadline, nobody
 *   leads until the thaw, then a leader is elected with a higher term.
 * - `cutConnections`: after repeated cuts one leader is agreed on, and a release still hands over.
 * - `cutFeed` (notify stores): `watchLive` is false while the feed is down, listeners are woken
 *   (with `undefined`) when it drops and again when it is back, and a standby still takes over.
 * Scenarios run one at a time: each acts on the one server every handle talks to.
 */
export function faultTests(o: ConformanceOptions, caps: { notify: boolean }): void {
  const { describe, it, before, after, afterEach } = runnerOf(o);
  const f = faultsOf(o);
  const timing = faultTiming(o.minLeaseMs);
  const { leaseDurationMs, renewDeadlineMs } = timing;
  const groups: Candidates[] = [];
  const escaped: unknown[] = [];
  const onEscape = (err: unknown) => escaped.push(err);
  let down = false;
  let frozen = false;
  const candidates = async (what: string, count = 2) => {
    const g = await new Candidates(uniqueLock(`${o.name}-${what}`), timing).start(count, () => o.makeStore());
    groups.push(g);
    return g;
  };
  const nothingEscaped = () => assert.deepEqual(escaped.splice(0), [], 'nothing escaped as an uncaught exception or unhandled rejection');
  const hasAny = f.restart || (f.kill && f.start) || (f.freeze && f.thaw) || f.cutConnections || (f.cutFeed && caps.notify);
  if (!hasAny) return;

  describe(`${o.name}: faults`, () => {
    before(() => {
      process.on('uncaughtException', onEscape);
      process.on('unhandledRejection', onEscape);
    });
    after(() => {
      process.off('uncaughtException', onEscape);
      process.off('unhandledRejection', onEscape);
    });
    afterEach(async () => {
      // A failed scenario must not leave the server down or frozen for the next one.
      if (frozen) await f.thaw!();
      if (down) await f.start!();
      frozen = down = false;
      await Promise.all(groups.splice(0).map((g) => g.stop()));
      nothingEscaped();
    });

    if (f.kill && f.start) {
      it('server killed under a leader: it steps down by its renew deadline, nobody leads while down, a leader with a higher term after the start', async () => {
        const g = await candidates('kill');
        const leader = await g.leader();
        await sleep(renewDeadlineMs / 2); // a few renewals
        down = true;
        await f.kill!();
        await g.assertStepsDownByDeadline(leader);
        assert.equal(g.leaders(), 0, 'nobody leads while the server is down');
        await sleep(leaseDurationMs / 4);
        assert.equal(g.leaders(), 0, 'nobody leads while the server is down');
        const startedAt = performance.now();
        await f.start!();
        down = false;
        const again = await waitFor(() => g.electedSince(startedAt), leaseDurationMs * 4 + 15_000, 'a leader after the start');
        assert.ok(again.term > leader.term, `term ${again.term} after ${leader.term}: the counter survived the kill`);
        g.assertNoOverlap();
        nothingEscaped();
      });
    }

    if (f.restart) {
      it('server restarted under a leader: a leader renews again afterwards, never two at once', async () => {
        const g = await candidates('restart');
        const leader = await g.leader();
        await sleep(renewDeadlineMs / 2);
        const restartedAt = performance.now();
        await f.restart!();
        // Either the leader rode the restart out, or it stepped down and someone was elected:
        // whoever leads must have written (renewed or acquired) after the restart began. (The
        // leader seen just after the restart may be the old one about to step down, so the
        // renewal is looked for on whoever leads at each look.)
        await waitFor(
          () => g.electors.some((e) => e.isLeader() && (e.leadershipWindow()?.renewStartMs ?? -Infinity) > restartedAt),
          leaseDurationMs * 4 + 15_000,
          'a leader that wrote after the restart',
        );
        const after = await g.leader();
        if (after.term !== leader.term) assert.ok(after.term > leader.term, `term ${after.term} after ${leader.term}`);
        g.assertNoOverlap();
        nothingEscaped();
      });
    }

    if (f.freeze && f.thaw) {
      it('server frozen past the lease: the leader steps down by its own deadline, nobody leads until the thaw, then a higher term', async () => {
        const g = await candidates('freeze');
        const leader = await g.leader();
        await sleep(renewDeadlineMs / 2);
        const frozenAt = performance.now();
        frozen = true;
        await f.freeze!();
        const stopped = await g.assertStepsDownByDeadline(leader);
        // Frozen for longer than the lease, counted from the freeze and from the step-down.
        const until = Math.max(frozenAt + leaseDurationMs + 500, stopped.at + leaseDurationMs - renewDeadlineMs + 500);
        while (performance.now() < until) {
          assert.equal(g.leaders(), 0, 'nobody leads while the server is frozen');
          await sleep(50);
        }
        const thawedAt = performance.now();
        await f.thaw!();
        frozen = false;
        const again = await waitFor(() => g.electedSince(thawedAt), leaseDurationMs * 4 + 15_000, 'a leader after the thaw');
        assert.ok(again.term > leader.term, `term ${again.term} after ${leader.term}`);
        assert.ok(again.at > stopped.at, 'the new leader came after the old one stepped down');
        g.assertNoOverlap();
        nothingEscaped();
      });
    }

    if (f.cutConnections) {
      it('every connection cut, three times: nothing escapes, one leader is agreed on, a release still hands over', async () => {
        const g = await candidates('cut');
        await g.leader();
        await waitFor(() => g.electors.every((e) => e.leader() !== null), leaseDurationMs * 3, 'every candidate to see the leader');
        for (let i = 0; i < 3; i++) {
          await f.cutConnections!();
          await sleep(300);
        }
        const settled = await waitFor(() => {
          const leaders = g.electors.filter((e) => e.isLeader());
          const holder = leaders[0]?.identity;
          return leaders.length === 1 && g.electors.every((e) => e.leader()?.holder === holder) ? leaders[0] : undefined;
        }, leaseDurationMs * 4 + 10_000, 'one leader seen by all after the cuts');
        const stoppedAt = performance.now();
        await settled.stop();
        await waitFor(() => g.electedSince(stoppedAt), leaseDurationMs * 3, 'a standby after the release');
        g.assertNoOverlap();
        for (const t of g.log) if (t.kind === 'stopped') assert.ok(['renew-deadline', 'lost', 'stopped'].includes(t.reason!), `stopped: ${t.reason}`);
        nothingEscaped();
      });
    }

    if (f.cutFeed && caps.notify) {
      it('change feed cut: watchLive is false while it is down, listeners are woken when it drops and told again when it is back', async () => {
        const handles = new Handles(o.makeStore);
        try {
          const store = await handles.get();
          const lock = uniqueLock(`${o.name}-feed`);
          const heard: { record: LeaseRecord | null | undefined; live: boolean }[] = [];
          const stop = store.watch!(lock, (record) => heard.push({ record, live: liveOf(store) }));
          await waitFor(() => liveOf(store), 5_000, 'the feed to be live');
          await sleep(200); // let a subscription settle
          await f.cutFeed!();
          await waitFor(() => heard.some((h) => h.record === undefined && !h.live), 5_000, 'a wake-up while the feed is down');
          const dropped = heard.findIndex((h) => h.record === undefined && !h.live);
          // Listeners are told again as the feed comes back (undefined: read it; or the record as re-read).
          await waitFor(() => liveOf(store) && heard.length > dropped + 1, 10_000, 'the feed back, and listeners told again');
          // The feed that came back carries changes again.
          const before = heard.length;
          const w = await acquire(await handles.get(), lock, null, acquireWrite('alice'));
          assert.ok(w.ok);
          await waitFor(() => heard.length > before, 5_000, 'a change heard on the feed that came back');
          stop();
        } finally {
          await handles.closeAll();
        }
      });

      it('change feed cut under a standby: the standby still takes over after a release', async () => {
        const g = await candidates('feed-handover');
        await g.leader();
        await waitFor(() => g.electors.every((e) => e.leader() !== null), leaseDurationMs * 3, 'the standby to see the leader');
        await f.cutFeed!();
        await sleep(100);
        const leader = g.electors.find((e) => e.isLeader())!;
        const stoppedAt = performance.now();
        await leader.stop();
        await waitFor(() => g.electedSince(stoppedAt), leaseDurationMs * 3 + 5_000, 'the standby after the release');
        g.assertNoOverlap();
        nothingEscaped();
      });
    }
  });
}

/** liveOf reads a store's watchLive (absent means always live). */
function liveOf(store: LeaseStore): boolean {
  return store.watchLive ?? true;
}
