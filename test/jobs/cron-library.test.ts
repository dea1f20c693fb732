/**
 * The cron library twin on the memory store (fast): the claim's fencing rules, and CronJob
 * instances sharing one store — one leader runs each slot once, a failover catches up or skips
 * missed slots by policy, work cut off by lost leadership is recorded `cut` and not retried.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { LeaderElector } from '../../src/core/elector.js';
import { realClock, type Clock } from '../../src/core/clock.js';
import { InvalidConfigError, StoreUnavailableError } from '../../src/core/errors.js';
import type { Ledger } from '../../src/core/store.js';
import { CronJob, cronJob, type CronRunContext } from '../../src/jobs/cron.js';
import { claimSlot, fenceCron, finishSlot, readCronHead } from '../../src/jobs/cron-ledger.js';
import { cronStatus, formatCronStatus } from '../../src/jobs/cron-status.js';

const FAST = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 };
const EVERY_SECOND = '* * * * * *';
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
const writer = (identity: string) => ({ identity });

async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms = 8_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

describe('cron ledger claims', () => {
  test('a slot is claimed once; an older term cannot claim after a newer term fenced', async () => {
    const ledger = new MemoryStore().ledger;
    const s = Date.UTC(2026, 0, 1, 0, 0, 10);
    const a = await claimSlot(ledger, 'c', 1, s, writer('a'), { claim: 'a1', wallMs: s });
    assert.ok(a.ok);
    const again = await claimSlot(ledger, 'c', 1, s, writer('a'), { claim: 'a2', wallMs: s });
    assert.deepEqual([again.ok, !again.ok && again.reason], [false, 'taken']);
    const fenced = await fenceCron(ledger, 'c', 2, writer('b'), s + 500);
    assert.equal(fenced.stale, false);
    // Term 1's run was in flight when term 2 fenced: it is marked cut.
    assert.equal(fenced.head.slots[0]!.status, 'cut');
    const stale = await claimSlot(ledger, 'c', 1, s + 1000, writer('a'), { claim: 'a3', wallMs: s });
    assert.deepEqual([stale.ok, !stale.ok && stale.reason], [false, 'stale']);
    assert.equal((await fenceCron(ledger, 'c', 1, writer('a'), s)).stale, true);
    const b = await claimSlot(ledger, 'c', 2, s + 1000, writer('b'), { claim: 'b1', wallMs: s + 1000 });
    assert.ok(b.ok);
    // The claimer's own outcome overrides the successor's "cut" guess.
    assert.equal(await finishSlot(ledger, 'c', 'a1', { kind: 'exit', exitCode: 0 }, s + 900), true);
    const head = (await readCronHead(ledger, 'c'))!;
    assert.deepEqual(head.slots.map((x) => [x.slot.slice(17, 19), x.term, x.status]), [['11', 2, 'running'], ['10', 1, 'ok']]);
    assert.equal(head.term, 2);
  });

  test('concurrent claims of one slot by many terms: exactly one wins', async () => {
    const ledger = new MemoryStore().ledger;
    const s = Date.UTC(2026, 0, 1);
    const results = await Promise.all([1, 2, 3, 4, 5].map((t) => claimSlot(ledger, 'race', t, s, writer(`w${t}`), { claim: `c${t}`, wallMs: s })));
    assert.equal(results.filter((r) => r.ok).length, 1);
    assert.equal((await readCronHead(ledger, 'race'))!.slots.length, 1);
  });

  test('a claim retried after a lost answer recognises itself', async () => {
    const ledger = new MemoryStore().ledger;
    const s = Date.UTC(2026, 0, 1);
    assert.ok((await claimSlot(ledger, 'r', 3, s, writer('a'), { claim: 'same', wallMs: s })).ok);
    const retry = await claimSlot(ledger, 'r', 3, s, writer('a'), { claim: 'same', wallMs: s });
    assert.ok(retry.ok && retry.record.claim === 'same');
  });
});

describe('CronJob on a shared memory store', { concurrency: true }, () => {
  test('bad options are config errors', () => {
    const store = new MemoryStore();
    assert.throws(() => new CronJob(store, 'x', { schedule: 'nope' }, async () => ({ kind: 'exit', exitCode: 0 })), InvalidConfigError);
    assert.throws(() => new CronJob(store, 'x', { schedule: EVERY_SECOND, missed: 'all' as never }, async () => ({ kind: 'exit', exitCode: 0 })), InvalidConfigError);
    assert.throws(() => new CronJob(store, 'x', { schedule: EVERY_SECOND, timezone: 'Nowhere/Land' }, async () => ({ kind: 'exit', exitCode: 0 })), InvalidConfigError);
  });

  // `a` holds a 2.5 s lease and never releases it: stopping it is a crash as far as `b` can tell,
  // and `b` takes over only after seeing the record unchanged for 2.5 s — two or three slots
  // come due with no leader.
  const CRASHY = { leaseDurationMs: 2500, renewDeadlineMs: 1500, retryPeriodMs: 100, releaseOnStop: false };

  test('two instances: each slot runs once, on the leader; after a crash the new leader catches up the latest missed slot', async () => {
    const backend = new MemoryStore().backend;
    const runs: Array<{ who: string; slot: string; term: number; late: boolean }> = [];
    const work = (who: string) => (ctx: CronRunContext) => void runs.push({ who, slot: ctx.slot.toISOString(), term: ctx.term, late: ctx.late });
    const electorA = new LeaderElector({ store: new MemoryStore(backend), lock: 'every-second', identity: 'a', ...CRASHY });
    const a = cronJob(new MemoryStore(backend), 'every-second', { schedule: EVERY_SECOND, elector: electorA }, work('a'));
    await waitFor('a to lead', () => electorA.isLeader());
    const b = cronJob(new MemoryStore(backend), 'every-second', { schedule: EVERY_SECOND, identity: 'b', ...FAST }, work('b'));
    try {
      await waitFor('two slots run by a', () => runs.filter((r) => r.who === 'a').length >= 2);
      await a.stop();
      const crashedAt = Date.now();
      await waitFor('b to run three slots', () => runs.filter((r) => r.who === 'b').length >= 3, 10_000);
      const head = (await readCronHead(new MemoryStore(backend).ledger!, 'every-second'))!;
      const slots = runs.map((r) => r.slot);
      assert.equal(new Set(slots).size, slots.length, `a slot ran twice: ${slots.join(' ')}`);
      // Every run is in the ledger, once, with its term; the ledger has nothing that did not run.
      const ledgerSlots = new Map(head.slots.map((s) => [s.slot, s]));
      for (const r of runs) assert.equal(ledgerSlots.get(r.slot)?.term, r.term, `run of ${r.slot} not in the ledger with term ${r.term}`);
      assert.deepEqual(head.slots.map((s) => s.slot).sort(), [...slots].sort());
      const firstOfB = runs.find((r) => r.who === 'b')!;
      assert.ok(firstOfB.term > runs[0]!.term);
      assert.ok(firstOfB.late, 'the newest slot missed during the failover ran, late');
      assert.ok(Date.parse(firstOfB.slot) > crashedAt - 1000, 'the caught-up slot came due during the outage');
      assert.ok((ledgerSlots.get(firstOfB.slot)!.skippedBefore ?? 0) >= 1, 'older missed slots are counted as skipped');
      assert.equal(runs.filter((r) => r.late).length, 1, 'only the failover slot runs late');
      assert.match(formatCronStatus(cronStatus(head)), /cron every-second: "\* \* \* \* \* \*" \(UTC, missed: latest\)/);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  test('missed: skip never runs a slot late after a failover', async () => {
    const backend = new MemoryStore().backend;
    const runs: CronRunContext[] = [];
    const electorA = new LeaderElector({ store: new MemoryStore(backend), lock: 'skipper', identity: 'a', ...CRASHY });
    const a = cronJob(new MemoryStore(backend), 'skipper', { schedule: EVERY_SECOND, missed: 'skip', elector: electorA }, (ctx) => void runs.push(ctx));
    await waitFor('a to lead', () => electorA.isLeader());
    const b = cronJob(new MemoryStore(backend), 'skipper', { schedule: EVERY_SECOND, missed: 'skip', identity: 'b', ...FAST }, (ctx) => void runs.push(ctx));
    let skippedEvents = 0;
    b.on('skipped', (e) => (skippedEvents += e.count));
    try {
      await waitFor('a slot by a', () => runs.length >= 1);
      await a.stop();
      const crashedAt = Date.now();
      await waitFor('b to run two slots', () => runs.filter((r) => r.identity === 'b').length >= 2, 10_000);
      assert.ok(runs.every((r) => !r.late), 'no slot ran late');
      const head = (await readCronHead(new MemoryStore(backend).ledger!, 'skipper'))!;
      const firstOfB = head.slots.filter((s) => s.identity === 'b').at(-1)!;
      assert.ok(!firstOfB.late);
      // b could not lead before ~2.4 s after the crash; with skip its first run is an on-time slot after that.
      assert.ok(Date.parse(firstOfB.slot) >= crashedAt + 1500, `b ran ${firstOfB.slot}, ${Date.parse(firstOfB.slot) - crashedAt}ms after the crash`);
      assert.ok((firstOfB.skippedBefore ?? 0) >= 1 && skippedEvents >= 1, 'the slots that came due during the outage were skipped');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  test('a successor whose wall clock is 3 s behind never repeats a slot; it waits until its clock passes the last claim', async () => {
    const backend = new MemoryStore().backend;
    const runs: Array<{ who: string; slotMs: number }> = [];
    const electorA = new LeaderElector({ store: new MemoryStore(backend), lock: 'skewed', identity: 'a', ...CRASHY });
    const a = cronJob(new MemoryStore(backend), 'skewed', { schedule: EVERY_SECOND, elector: electorA }, (ctx) => void runs.push({ who: 'a', slotMs: ctx.slot.getTime() }));
    await waitFor('a to lead', () => electorA.isLeader());
    const behind: Clock = { ...realClock, wallMs: () => Date.now() - 3_000 };
    const b = cronJob(new MemoryStore(backend), 'skewed', { schedule: EVERY_SECOND, identity: 'b', clock: behind, ...FAST }, (ctx) => void runs.push({ who: 'b', slotMs: ctx.slot.getTime() }));
    try {
      await waitFor('two slots by a', () => runs.filter((r) => r.who === 'a').length >= 2);
      await a.stop();
      await waitFor('two slots by b', () => runs.filter((r) => r.who === 'b').length >= 2, 15_000);
      const lastOfA = Math.max(...runs.filter((r) => r.who === 'a').map((r) => r.slotMs));
      const ofB = runs.filter((r) => r.who === 'b').map((r) => r.slotMs);
      assert.ok(Math.min(...ofB) > lastOfA, 'b only runs slots after the last one a claimed');
      assert.equal(new Set(runs.map((r) => r.slotMs)).size, runs.length, 'no slot ran twice');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  test('work still running when leadership ends is cut, recorded so, and not retried', async () => {
    const store = new MemoryStore();
    const seen: string[] = [];
    let resolveStarted!: () => void;
    const started = new Promise<void>((r) => (resolveStarted = r));
    const job = cronJob(store, 'slow', { schedule: EVERY_SECOND, identity: 'slowpoke', ...FAST }, async (ctx) => {
      seen.push(ctx.slot.toISOString());
      if (seen.length > 1) return;
      resolveStarted();
      // Honour the signal: return when leadership ends.
      await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }));
    });
    try {
      await started;
      await job.elector.resign();
      await waitFor('the cut to be recorded', async () => (await readCronHead(store.ledger, 'slow'))?.slots.find((s) => s.status === 'cut'));
      await waitFor('the next slot', () => seen.length >= 2);
      const head = (await readCronHead(store.ledger, 'slow'))!;
      const cut = head.slots.find((s) => s.status === 'cut')!;
      assert.equal(cut.slot, seen[0]);
      assert.match(cut.reason ?? '', /resigned/);
      assert.equal(seen.filter((s) => s === cut.slot).length, 1, 'the cut slot was not run again');
    } finally {
      await job.stop();
    }
  });

  test('store failures: the fence is retried until it lands; a claim that keeps failing gives up that slot only', async () => {
    const store = new MemoryStore();
    let failNext = 4;
    const ledger: Ledger = {
      get: (k) => store.ledger.get(k),
      list: (p, l) => store.ledger.list(p, l),
      put: async (k, e, v) => {
        if (failNext > 0) {
          failNext--;
          throw new StoreUnavailableError('ledger: injected failure');
        }
        return store.ledger.put(k, e, v);
      },
    };
    const flaky = Object.assign(Object.create(Object.getPrototypeOf(store)), store, { ledger }) as MemoryStore;
    const ran: string[] = [];
    const job = new CronJob(flaky, 'flaky', { schedule: EVERY_SECOND, ...FAST }, async (ctx) => {
      ran.push(ctx.slot.toISOString());
      return { kind: 'exit', exitCode: 0 };
    });
    let errors = 0;
    job.on('storeError', () => errors++);
    job.on('finished', () => {
      // After the first slot, break the next claim (three attempts).
      if (ran.length === 1) failNext = 3;
    });
    job.start();
    try {
      await waitFor('three slots after the failures', () => ran.length >= 3, 10_000);
      assert.equal(errors, 7, 'four failed fence writes, three failed claim writes');
      const claimed = (await readCronHead(store.ledger, 'flaky'))!.slots.map((x) => x.slotMs).reverse();
      assert.deepEqual(claimed.map((x) => new Date(x).toISOString()).slice(0, 3), ran.slice(0, 3));
      assert.equal(claimed[1]! - claimed[0]!, 2_000, 'the slot whose claim failed was given up, the next one ran');
    } finally {
      await job.stop();
    }
  });

  test('a throwing job is recorded failed with its message; stop() releases the lease', async () => {
    const store = new MemoryStore();
    const job = cronJob(store, 'fails', { schedule: EVERY_SECOND, ...FAST }, () => {
      throw Object.assign(new Error('disk full'), { exitCode: 5 });
    });
    try {
      const slot = await waitFor('a failed slot', async () => (await readCronHead(store.ledger, 'fails'))?.slots.find((s) => s.status === 'failed'));
      assert.equal(slot.exitCode, 5);
      assert.equal(slot.reason, 'disk full');
    } finally {
      await job.stop();
    }
    assert.equal((await store.read('fails'))?.holder, null);
  });
});
