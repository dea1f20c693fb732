/**
 * Task locks: the library on the memory store with hand-driven host clocks (two "hosts" are
 * two boot ids with clocks that have nothing in common), then `baton lock` as real processes
 * on SQLite.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { InvalidConfigError } from '../../src/core/errors.js';
import { readTaskLock, tryTaskLock, withTaskLock, type TaskLockOptions } from '../../src/jobs/task-lock.js';
import type { HostClock } from '../../src/jobs/host-clock.js';
import { BatonProcess, TempDir, cleanEnv, delay, lines, pidAlive, runCli, waitFor } from '../harness/cli.js';

/** A host whose monotonic clock moves only when told; its epoch is unrelated to any other host's. */
class FakeHost implements HostClock {
  constructor(
    readonly bootId: string,
    public now: number,
  ) {}
  monotonicMs(): number {
    return this.now;
  }
}

describe('withTaskLock (memory store, fake host clocks)', () => {
  const opts = (host: HostClock, o: Partial<TaskLockOptions> = {}): TaskLockOptions => ({ atMostForMs: 10_000, hostClock: host, ...o });

  test('runs when free, skips while held, and runs again once released', async () => {
    const store = new MemoryStore();
    const h = new FakeHost('boot:a', 1_000);
    let inner: unknown;
    const outer = await withTaskLock(store, 'report', opts(h, { identity: 'one' }), async (ctx) => {
      assert.equal(ctx.term, 1);
      inner = await withTaskLock(store, 'report', opts(h, { identity: 'two' }), () => assert.fail('must not run'));
      return 'done';
    });
    assert.deepEqual(outer, { ran: true, value: 'done', lock: 'released' });
    assert.deepEqual(inner, { ran: false, holder: 'one', phase: 'running', remainingMs: 10_000 });
    const again = await withTaskLock(store, 'report', opts(h), (ctx) => ctx.term);
    assert.deepEqual(again, { ran: true, value: 2, lock: 'released' });
  });

  test('at most for: a crashed holder\'s lock is taken once atMostFor has passed on the holder\'s host clock', async () => {
    const store = new MemoryStore();
    const host = new FakeHost('boot:a', 50_000);
    const crashed = await tryTaskLock(store, 'nightly', opts(host, { identity: 'crashed' }));
    assert.ok(crashed.acquired);
    // The holder dies here and never finishes. Another process on the same host counts from the holder's own start.
    host.now += 9_999;
    const early = await tryTaskLock(store, 'nightly', opts(host));
    assert.deepEqual(early, { acquired: false, holder: 'crashed', phase: 'running', remainingMs: 1 });
    host.now += 1;
    const taken = await tryTaskLock(store, 'nightly', opts(host, { identity: 'heir' }));
    assert.ok(taken.acquired && taken.hold.term === 2);
    assert.equal(await crashed.hold.finish({ ok: true }), 'lost', 'the overrunning holder learns it was taken over');
    assert.equal((await readTaskLock(store, 'nightly'))?.holder, 'heir');
  });

  test('at most for, another host: it counts from when it first saw the hold, never from the holder\'s clock', async () => {
    const store = new MemoryStore();
    const hostA = new FakeHost('boot:a', 7);
    const hostB = new FakeHost('boot:b', 123_456_789);
    const a = await tryTaskLock(store, 'x', opts(hostA, { identity: 'a' }));
    assert.ok(a.acquired);
    hostA.now += 4_000;
    // B looks for the first time 4 s into the hold: it stamps its sighting and counts a full 10 s from there.
    assert.deepEqual(await tryTaskLock(store, 'x', opts(hostB)), { acquired: false, holder: 'a', phase: 'running', remainingMs: 10_000 });
    hostB.now += 9_000;
    assert.equal((await tryTaskLock(store, 'x', opts(hostB))).acquired, false, 'B waits out its own count');
    hostB.now += 1_000;
    assert.equal((await tryTaskLock(store, 'x', opts(hostB))).acquired, true);
    assert.equal(await a.hold.finish({ ok: true }), 'lost');
  });

  test('at least for: a short run keeps the lock until atLeastFor from its start; the holder need not stay', async () => {
    const store = new MemoryStore();
    const host = new FakeHost('boot:a', 0);
    const first = await withTaskLock(store, 'sync', opts(host, { atLeastForMs: 3_000, identity: 'h1' }), () => {
      host.now += 200;
      return 'ran';
    });
    assert.deepEqual(first, { ran: true, value: 'ran', lock: 'cooling' });
    host.now += 2_700;
    const second = await withTaskLock(store, 'sync', opts(host, { atLeastForMs: 3_000 }), () => assert.fail('suppressed'));
    assert.deepEqual(second, { ran: false, holder: 'h1', phase: 'cooling', remainingMs: 100 });
    // Another host whose clock runs differently sees it held for its own full 3 s.
    const other = new FakeHost('boot:b', 99);
    assert.deepEqual(await tryTaskLock(store, 'sync', opts(other, { atLeastForMs: 3_000 })), { acquired: false, holder: 'h1', phase: 'cooling', remainingMs: 3_000 });
    host.now += 100;
    assert.equal((await withTaskLock(store, 'sync', opts(host), () => 'again')).ran, true);
    const record = await readTaskLock(store, 'sync');
    assert.deepEqual([record?.phase, record?.holder, record?.last?.ok], ['free', null, true]);
  });

  test('a run longer than atLeastFor releases at once; a throwing run finishes the lock and rethrows', async () => {
    const store = new MemoryStore();
    const host = new FakeHost('boot:a', 0);
    const long = await withTaskLock(store, 'l', opts(host, { atLeastForMs: 1_000 }), () => {
      host.now += 1_500;
    });
    assert.equal(long.ran && long.lock, 'released');
    await assert.rejects(
      withTaskLock(store, 'l', opts(host), () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    const record = await readTaskLock(store, 'l');
    assert.deepEqual([record?.phase, record?.last?.ok, record?.last?.detail], ['free', false, 'boom']);
  });

  test('the signal is aborted shortly before atMostFor', async () => {
    const store = new MemoryStore();
    const t0 = performance.now();
    const r = await withTaskLock(store, 'sig', { atMostForMs: 300 }, (ctx) => new Promise<number>((resolve) => ctx.signal.addEventListener('abort', () => resolve(performance.now() - t0))));
    assert.ok(r.ran && r.value >= 150 && r.value < 300, `aborted after ${r.ran && r.value}ms`);
  });

  test('bad durations are config errors', async () => {
    const store = new MemoryStore();
    await assert.rejects(withTaskLock(store, 'v', { atMostForMs: 1_000, atLeastForMs: 2_000 }, () => {}), (e: Error) => e instanceof InvalidConfigError && /atLeastForMs \(2000ms\) must not be longer than atMostForMs/.test(e.message));
    await assert.rejects(withTaskLock(store, 'v', { atMostForMs: 0 }, () => {}), InvalidConfigError);
    await assert.rejects(withTaskLock(store, 'bad name', { atMostForMs: 1_000 }, () => {}), InvalidConfigError);
  });
});

describe('baton lock (real processes, SQLite)', () => {
  const dir = new TempDir();
  const started: BatonProcess[] = [];
  after(async () => {
    await Promise.all(started.map((b) => b.kill()));
    dir.remove();
  });
  const env = cleanEnv(dir.path, { BATON_STORE: dir.sqlite('locks.db') });
  const log = dir.join('runs.log');
  const appendRun = (tag: string) => ['sh', '-c', `echo "${tag} $BATON_TERM" >> '${log}'`];
  const runs = () => {
    try {
      return lines(readFileSync(log, 'utf8'));
    } catch {
      return [];
    }
  };

  test('a second run while the first holds the lock is skipped: exit 0, said on stderr', async () => {
    const first = new BatonProcess(['lock', '--lock', 'busy', '--at-most-for', '20s', '--', 'sh', '-c', `echo first >> '${log}'; sleep 2`], { env });
    started.push(first);
    await waitFor('the first run', () => runs().includes('first'));
    const second = await runCli(['lock', '--lock', 'busy', '--at-most-for', '20s', '--', ...appendRun('second')], { env });
    assert.equal(second.code, 0);
    assert.match(second.stderr, /^baton: lock "busy" is held by \S+ \(it is running; free in at most .* as this host counts\); not running sh\n$/);
    assert.equal((await first.waitForExit()).code, 0);
    assert.deepEqual(runs(), ['first']);
  });

  test('--at-least-for suppresses a second run after a quick first one, until it has passed', async () => {
    const a = await runCli(['lock', '--lock', 'quick', '--at-most-for', '10s', '--at-least-for', '2s', '--', ...appendRun('quick-1')], { env });
    assert.equal(a.code, 0);
    const b = await runCli(['lock', '--lock', 'quick', '--at-most-for', '10s', '--at-least-for', '2s', '--', ...appendRun('quick-2')], { env });
    assert.equal(b.code, 0);
    assert.match(b.stderr, /at-least-for has not passed/);
    await delay(2_100);
    const c = await runCli(['lock', '--lock', 'quick', '--at-most-for', '10s', '--', ...appendRun('quick-3')], { env });
    assert.equal(c.code, 0);
    assert.deepEqual(runs().filter((l) => l.startsWith('quick')), ['quick-1 1', 'quick-3 2']);
  });

  test('a SIGKILLed holder: its command dies with it, the lock stays held until --at-most-for, then the next run goes', async () => {
    // The lock is taken after this instant, so it cannot be free before t0 + at-most-for.
    const t0 = performance.now();
    const holder = new BatonProcess(['lock', '--lock', 'crash', '--at-most-for', '3s', '--', 'sh', '-c', `echo "crash-1 $$" >> '${log}'; sleep 30`], { env });
    started.push(holder);
    const line = await waitFor('the holder\'s command', () => runs().find((l) => l.startsWith('crash-1')));
    holder.signal('SIGKILL');
    const pid = Number(line.split(' ')[1]);
    await waitFor('the orphaned command to be killed by the watchdog', () => !pidAlive(pid), 5_000);
    const skipped = await runCli(['lock', '--lock', 'crash', '--at-most-for', '3s', '--', ...appendRun('crash-2')], { env });
    assert.equal(skipped.code, 0);
    assert.match(skipped.stderr, /is held by/);
    await waitFor(
      'the lock to be taken after at-most-for',
      async () => (await runCli(['lock', '--lock', 'crash', '--at-most-for', '3s', '--', ...appendRun('crash-3')], { env })).code === 0 && runs().some((l) => l.startsWith('crash-3')),
      10_000,
      200,
    );
    const waited = performance.now() - t0;
    assert.ok(waited >= 3_000 - 50, `taken over ${waited.toFixed(0)}ms after the holder started, before at-most-for`);
    assert.ok(!runs().some((l) => l.startsWith('crash-2')));
  });

  test('a command still running at --at-most-for is stopped; baton exits 75', async () => {
    const r = await runCli(['lock', '--lock', 'overrun', '--at-most-for', '500ms', '--', 'sleep', '10'], { env });
    assert.equal(r.code, 75);
    assert.match(r.stderr, /still running at --at-most-for/);
  });
});
