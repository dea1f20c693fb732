import assert from 'node:assert/strict';
import { LeaderElector } from '../../core/elector.js';
import type { CandidateOptions } from '../../core/candidate-side.js';
import { listCandidates } from '../../core/candidates.js';
import { Handles, uniqueLock, waitFor, type ConformanceOptions, runnerOf } from './context.js';
import { StoreUnavailableError } from '../../core/errors.js';

/** Short timings scaled from the store's shortest supported lease (as handover.ts's), and a short registry beat. */
function timing(minLeaseMs: number) {
  const base = Math.max(600, minLeaseMs);
  // The periods are short (a roll takes a few seconds); the lease is longer than they need, so a
  // loaded machine neither misses renewals nor runs out the half lease a graceful stop gives its
  // successor to accept — each would move leadership for reasons other than the rule under test.
  const lease = Math.max(1500, base);
  return {
    leaseDurationMs: lease,
    renewDeadlineMs: Math.round(lease * 0.6),
    retryPeriodMs: Math.round(base / 8),
    refreshMs: Math.max(100, Math.round(base / 6)),
  };
}

/**
 * The three ways a fleet can be rolled: `newest` (candidate with `prefer: 'newest'`), `registry`
 * (registered candidates, no preference: a leader's graceful stop hands over to the best live
 * candidate) and `none` (no `candidate` option: a leader's stop releases to a race).
 */
type Mode = 'newest' | 'registry' | 'none';
const MODES: readonly Mode[] = ['newest', 'registry', 'none'];

/** Every order of the old three's termination, as roles: L is the leader when the roll starts, a and b the other two. */
const ORDERS: readonly (readonly Role[])[] = [
  ['L', 'a', 'b'],
  ['L', 'b', 'a'],
  ['a', 'L', 'b'],
  ['b', 'L', 'a'],
  ['a', 'b', 'L'],
  ['b', 'a', 'L'],
];
type Role = 'L' | 'a' | 'b';

/** What one roll saw: the leaders in order of election ((holder, term), distinct), and how often two led at once. */
interface Roll {
  readonly leaders: string[];
  /** The leaders with how each term ended, for the diagnostics. */
  readonly shown: string[];
  readonly transitions: number;
  readonly overlapSamples: number;
  readonly samples: number;
  /**
   * A term ended by a missed renewal ('renew-deadline') or a lost lease: the machine, not the
   * rule under test, moved leadership. Such a roll is run again (see `rolled`).
   */
  readonly disturbed: boolean;
}

/**
 * rollingTests (compare-and-set stores with a ledger) registers the rolling-deploy test: three
 * electors at app version 1.0.0 are replaced one by one by three at 2.0.0, surge-style (a new one
 * starts; once it is registered and has been present a retry period plus a refresh period, an old
 * one is stopped gracefully with `stop()`), in every order of termination of the old three.
 * Leadership transitions are the distinct (holder, term) pairs announced by `elected`, less the
 * first. With `prefer: 'newest'` there is exactly one in every order, to a new instance,
 * and never two `isLeader()` at once. The same schedule is run with registered candidates but no
 * preference, and with no registry at all (release and race), and their counts are reported
 * beside it as test diagnostics.
 */
export function rollingTests(o: ConformanceOptions): void {
  const { describe, it, after } = runnerOf(o);
  const t = timing(o.minLeaseMs ?? 600);
  const results = new Map<Mode, { order: string; roll: Roll }[]>();

  const candidateOf = (mode: Mode, appVersion: string): CandidateOptions | undefined =>
    mode === 'none' ? undefined : mode === 'newest' ? { appVersion, prefer: 'newest', refreshMs: t.refreshMs } : { appVersion, refreshMs: t.refreshMs };

  async function roll(mode: Mode, order: readonly Role[]): Promise<Roll> {
    const handles = new Handles(o.makeStore);
    const lock = uniqueLock(`rolling-${mode}`);
    const all: LeaderElector[] = [];
    const leaders: string[] = [];
    const ends = new Map<string, { reason: string; atMs: number }>();
    const electedAt = new Map<string, number>();
    const make = async (identity: string, appVersion: string) => {
      const candidate = candidateOf(mode, appVersion);
      const e = new LeaderElector({ store: await handles.get(), lock, identity, leaseDurationMs: t.leaseDurationMs, renewDeadlineMs: t.renewDeadlineMs, retryPeriodMs: t.retryPeriodMs, ...(candidate ? { candidate } : {}) });
      e.on('storeError', () => {});
      e.on('elected', (ev) => {
        const key = `${identity}@${ev.term}`;
        if (!leaders.includes(key)) leaders.push(key);
        electedAt.set(key, performance.now());
      });
      // How each term ended: 'handover' (the preference rule) or 'stopped' (stop(), then a handover or a release).
      e.on('stopped', (ev) => ends.set(`${identity}@${ev.term}`, { reason: ev.reason, atMs: performance.now() }));
      all.push(e);
      return e;
    };
    // Registered and beating: its entry is in the ledger (never for mode none: it has none).
    const registered = async (e: LeaderElector) => {
      if (mode === 'none') return waitFor(() => e.leader() !== null, t.leaseDurationMs * 4 + 3000, `${e.identity} to see the leader`);
      return waitFor(async () => (await listCandidates(e.store, lock)).some((x) => x.identity === e.identity && !x.left), 5000, `${e.identity} registered`);
    };
    let samples = 0;
    let overlapSamples = 0;
    const sampler = setInterval(() => {
      samples++;
      if (all.filter((e) => e.isLeader()).length > 1) overlapSamples++;
    }, 3);
    try {
      const old = await Promise.all([0, 1, 2].map((i) => make(`old-${i}`, '1.0.0')));
      old.forEach((e) => e.start());
      await waitFor(() => old.some((e) => e.isLeader()), t.leaseDurationMs * 4 + 3000, 'a first leader');
      for (const e of old) await registered(e);
      const first = old.find((e) => e.isLeader());
      if (!first) return { leaders, shown: leaders, transitions: leaders.length - 1, overlapSamples, samples, disturbed: true };
      const [a, b] = old.filter((e) => e !== first);
      const byRole: Record<Role, LeaderElector> = { L: first, a: a!, b: b! };
      for (let i = 0; i < 3; i++) {
        const fresh = await make(`new-${i}`, '2.0.0');
        fresh.start();
        await registered(fresh);
        await new Promise((r) => setTimeout(r, t.retryPeriodMs + t.refreshMs));
        // As a deploy waits for a new instance to be ready for a while before it stops an old one:
        // with a preference rule, long enough for the rule to have acted (a new instance leads).
        // On a slow store the rule's four writes can outlast the fixed wait above.
        if (mode === 'newest') await waitFor(() => all.slice(3).some((e) => e.isLeader()), t.leaseDurationMs * 4 + 3000, 'the preference rule to move leadership to a new instance').catch(() => undefined);
        await byRole[order[i]!].stop();
        // A process takes a while to start: the next new one comes after the lease has settled
        // (a brand-new elector that reads a just-freed record would otherwise beat standbys that
        // hear of the release only at their next poll — a race no real deploy runs that fast).
        await waitFor(() => all.some((e) => e.isLeader()), t.leaseDurationMs * 4 + 3000, `a leader after stopping ${byRole[order[i]!].identity}`);
      }
      const fresh = all.slice(3);
      await waitFor(() => fresh.some((e) => e.isLeader()), t.leaseDurationMs * 4 + 3000, 'a new leader after the roll');
      // Late moves (a preference pass still due) show up within a few refresh periods.
      await new Promise((r) => setTimeout(r, t.refreshMs * 3 + t.retryPeriodMs));
    } finally {
      clearInterval(sampler);
      await Promise.all(all.map((e) => e.stop().catch(() => {})));
      await handles.closeAll();
    }
    // Each term with how it ended, and the gap from that end to the next leader's election.
    const shown = leaders.map((k, i) => {
      const end = ends.get(k);
      const next = leaders[i + 1];
      if (next === undefined) return k;
      const gap = end ? `, ${(electedAt.get(next)! - end.atMs).toFixed(0)} ms to the next` : '';
      return `${k} (${end?.reason ?? '?'}${gap})`;
    });
    const disturbed = [...ends.values()].some((e) => e.reason === 'renew-deadline' || e.reason === 'lost');
    return { leaders, shown, transitions: leaders.length - 1, overlapSamples, samples, disturbed };
  }

  /**
   * rolled runs a roll until one is not disturbed by the machine (a missed renewal on a loaded
   * host), three tries at most; every try is checked for two leaders at once all the same.
   */
  async function rolled(mode: Mode, order: readonly Role[], first?: Roll): Promise<Roll> {
    // A store that did not answer while a roll was being set up (an emulator swamped by six rolls
    // opening handles at once) disturbed it too.
    const attempt = (): Promise<Roll> =>
      roll(mode, order).catch((err: unknown) => {
        if (!(err instanceof StoreUnavailableError)) throw err;
        return { leaders: [], shown: [`store unavailable: ${err.message}`], transitions: 0, overlapSamples: 0, samples: 0, disturbed: true };
      });
    let r = first ?? (await attempt());
    for (let n = 1; r.disturbed && n < 3; n++) {
      assert.equal(r.overlapSamples, 0, `${mode} ${line(order, r)}: two candidates were isLeader() at once`);
      r = await attempt();
    }
    return r;
  }

  const line = (order: readonly Role[], r: Roll) => `stop order ${order.join(',')}: ${r.transitions} transition(s): ${r.shown.join(' → ')}`;

  describe(`${o.name}: rolling deploy`, () => {
    after(() => results.clear());

    for (const mode of MODES) {
      const title =
        mode === 'newest'
          ? "prefer 'newest': 3 × 1.0.0 replaced by 3 × 2.0.0 in every order moves leadership exactly once, never two leaders"
          : mode === 'registry'
            ? 'registered candidates, no preference (graceful stop hands over): transitions reported'
            : 'no candidate registry (release and race, the default): transitions reported';
      it(title, async (tc) => {
        // Each roll takes about ten retry and refresh periods: on a store with long leases
        // (Azure's 15 s) the six orders run at once, on locks of their own; on short ones, one
        // after another, so a loaded machine's scheduling delays do not add up across them.
        const rolls = t.leaseDurationMs >= 5000 ? await Promise.all(ORDERS.map((order) => rolled(mode, order))) : [];
        const rows: { order: string; roll: Roll }[] = [];
        results.set(mode, rows);
        for (const [i, order] of ORDERS.entries()) {
          const r = await rolled(mode, order, rolls[i]);
          rows.push({ order: order.join(','), roll: r });
          tc.diagnostic(`${mode}: ${line(order, r)} (${r.samples} samples, ${r.overlapSamples} with two leaders${r.disturbed ? '; disturbed by missed renewals three times' : ''})`);
          // Sanity in every mode: never two leaders, and the roll ends led by a new instance.
          assert.equal(r.overlapSamples, 0, `${mode} ${line(order, r)}: two candidates were isLeader() at once`);
          if (!r.disturbed) assert.ok(r.transitions >= 1 && /^new-/.test(r.leaders.at(-1)!), `${mode} ${line(order, r)}: not led by a new instance at the end`);
          if (mode === 'newest') {
            assert.ok(!r.disturbed, `${mode} ${line(order, r)}: three tries in a row lost a lease to a missed renewal (an overloaded machine)`);
            assert.equal(r.transitions, 1, `${mode} ${line(order, r)}`);
            // To a new instance: the first one when the preference rule moved it, or the best ranked
            // (equal versions: the latest started) when the leader was stopped before the rule acted.
            assert.match(r.leaders[1]!, /^new-/, `${mode} ${line(order, r)}: the move went to a new instance`);
          }
        }
      });
    }

    it('side by side: transitions per order of termination', (tc) => {
      tc.diagnostic(`${o.name}: leadership transitions in a rolling deploy of 3 (stop order by role: L = leader at the start)`);
      tc.diagnostic(`order   | ${MODES.join(' | ')}`);
      for (const [i, order] of ORDERS.entries()) {
        tc.diagnostic(`${order.join(',')}   | ${MODES.map((m) => String(results.get(m)?.[i]?.roll.transitions ?? '–').padEnd(m.length)).join(' | ')}`);
      }
      for (const m of MODES) {
        const counts = (results.get(m) ?? []).map((x) => x.roll.transitions);
        if (counts.length) tc.diagnostic(`${m}: total ${counts.reduce((x, y) => x + y, 0)} over ${counts.length} rolls, max ${Math.max(...counts)}`);
      }
    });
  });
}
