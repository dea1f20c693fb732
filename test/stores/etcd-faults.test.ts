/**
 * Fault tests for the etcd store with real electors on short leases (lease 2 s, renew deadline
 * 1.4 s, retry 200 ms) against a real etcd 3.4: killed (SIGKILL) and restarted, frozen (SIGSTOP)
 * for longer than the lease, and every TCP connection cut under the clients' feet by a loopback
 * proxy (the one stand-in here: a real proxy process would do the same, a little slower).
 * Throughout, leaderships must never overlap, terms must only grow, and nothing may escape as
 * `uncaughtException` / `unhandledRejection`. Bounds are generous: these prove behaviour; the
 * benchmarks measure it.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { LeaderElector, type StopReason } from '../../src/core/elector.js';
import type { LeaseStore } from '../../src/core/store.js';
import { open } from '../../src/stores/etcd/open.js';
import { EtcdServer, freePort } from '../harness/servers.js';

const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_400, retryPeriodMs: 200 };
/** Timer and event-loop slack allowed on top of the renew deadline. */
const SLACK_MS = 600;

const server = await new EtcdServer().start();
after(() => server.stop());

const escaped: unknown[] = [];
const onEscape = (err: unknown) => escaped.push(err);
process.on('uncaughtException', onEscape);
process.on('unhandledRejection', onEscape);
after(() => {
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor<T>(check: () => T, ms: number, what: string): Promise<NonNullable<T>> {
  const until = performance.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v as NonNullable<T>;
    if (performance.now() > until) throw new Error(`timed out after ${ms}ms waiting for ${what}`);
    await sleep(20);
  }
}

interface Transition {
  at: number;
  who: string;
  kind: 'elected' | 'stopped';
  term: number;
  reason?: StopReason;
}

/** Candidates for one lock, each on its own store handle (its own connection). */
class Candidates {
  readonly electors: LeaderElector[] = [];
  readonly stores: LeaseStore[] = [];
  readonly log: Transition[] = [];
  /** Monotonic start of each candidate's last successful write (what its deadline counts from). */
  readonly lastWriteStart = new Map<string, number>();
  readonly signals = new Map<number, AbortSignal>();

  static async create(lock: string, count: number, url: string): Promise<Candidates> {
    const c = new Candidates();
    for (let i = 0; i < count; i++) c.add(await open(url), lock, `${lock}-c${i}`);
    return c;
  }

  private add(store: LeaseStore, lock: string, who: string): void {
    const e = new LeaderElector({ store, lock, identity: who, ...TIMING });
    e.on('elected', (ev) => {
      this.lastWriteStart.set(who, e.leadershipWindow()!.renewStartMs);
      this.signals.set(ev.term, ev.signal);
      this.log.push({ at: performance.now(), who, kind: 'elected', term: ev.term });
    });
    e.on('renewed', () => this.lastWriteStart.set(who, e.leadershipWindow()!.renewStartMs));
    e.on('stopped', (ev) => this.log.push({ at: performance.now(), who, kind: 'stopped', term: ev.term, reason: ev.reason }));
    e.on('storeError', () => {});
    this.electors.push(e);
    this.stores.push(store);
  }

  start(): void {
    this.electors.forEach((e) => e.start());
  }

  async stop(): Promise<void> {
    await Promise.all(this.electors.map((e) => e.stop()));
    await Promise.all(this.stores.map((s) => s.close()));
  }

  electedSince(at: number): Transition | undefined {
    return this.log.find((t) => t.kind === 'elected' && t.at >= at);
  }

  /** assertSafe: one leader at a time, every leadership stopped before the next began, terms growing. */
  assertSafe(): void {
    let current: Transition | undefined;
    let lastTerm = 0;
    for (const t of this.log) {
      if (t.kind === 'elected') {
        assert.equal(current, undefined, `${t.who} elected (term ${t.term}) while ${current?.who} led`);
        assert.ok(t.term > lastTerm, `term ${t.term} after ${lastTerm}`);
        lastTerm = t.term;
        current = t;
      } else {
        assert.equal(t.who, current?.who, `${t.who} stopped without leading`);
        current = undefined;
      }
    }
  }
}

let groups: Candidates[] = [];
afterEach(async () => {
  await Promise.all(groups.map((g) => g.stop()));
  groups = [];
  if (server.pid === undefined) await server.start();
  assert.deepEqual(escaped, [], 'nothing escaped as an uncaught exception or unhandled rejection');
});

/** report prints a figure as a TAP comment. */
const report = (line: string) => process.stdout.write(`# etcd faults: ${line}\n`);

let n = 0;
const uniqueLock = (what: string) => `etcd-fault-${what}-${process.pid}-${n++}`;

async function leaderOf(g: Candidates): Promise<Transition> {
  return waitFor(() => g.electedSince(0), 10_000, 'a leader');
}

/** A leader that loses the store must stop by its own deadline, counted from its last good write. */
async function assertStepsDownByDeadline(g: Candidates, leader: Transition): Promise<Transition> {
  const stopped = await waitFor(
    () => g.log.find((t) => t.kind === 'stopped' && t.term === leader.term),
    TIMING.renewDeadlineMs + 5_000,
    'the leader to stop',
  );
  assert.equal(stopped.reason, 'renew-deadline');
  assert.equal(g.signals.get(leader.term)?.aborted, true, 'its signal is aborted');
  const late = stopped.at - g.lastWriteStart.get(leader.who)!;
  assert.ok(late <= TIMING.renewDeadlineMs + SLACK_MS, `stopped ${late.toFixed(0)} ms after its last good write started`);
  report(`stopped ${late.toFixed(0)} ms after its last good write started (renew deadline ${TIMING.renewDeadlineMs} ms)`);
  return stopped;
}

describe('etcd: faults', () => {
  it('server killed: the leader stops within its renew deadline; after a restart a leader is elected again', async () => {
    const g = await Candidates.create(uniqueLock('kill'), 2, server.url);
    groups.push(g);
    g.start();
    const leader = await leaderOf(g);
    await sleep(600); // a few renewals
    await server.kill();
    await assertStepsDownByDeadline(g, leader);
    await sleep(500);
    const restartedAt = performance.now();
    await server.start();
    const again = await waitFor(() => g.electedSince(restartedAt), 20_000, 'a leader after the restart');
    report(`leader again ${(again.at - restartedAt).toFixed(0)} ms after the restart began`);
    g.assertSafe();
  });

  it('server frozen (SIGSTOP) longer than the lease: the leader stops by its deadline; after SIGCONT a leader is elected again', async () => {
    const g = await Candidates.create(uniqueLock('pause'), 2, server.url);
    groups.push(g);
    g.start();
    const leader = await leaderOf(g);
    await sleep(600);
    const pausedAt = performance.now();
    server.pause();
    try {
      await assertStepsDownByDeadline(g, leader);
      await sleep(Math.max(0, pausedAt + TIMING.leaseDurationMs + 1_500 - performance.now()));
      assert.equal(g.electors.filter((e) => e.isLeader()).length, 0, 'nobody leads while the store is frozen');
    } finally {
      server.resume();
    }
    const resumedAt = performance.now();
    const again = await waitFor(() => g.electedSince(resumedAt), 20_000, 'a leader after SIGCONT');
    report(`leader again ${(again.at - resumedAt).toFixed(0)} ms after SIGCONT (frozen ${(resumedAt - pausedAt).toFixed(0)} ms)`);
    g.assertSafe();
  });

  it('every connection cut: nothing escapes, watches come back, handover stays notified', async () => {
    const proxy = await CuttingProxy.start(server.port);
    try {
      const g = await Candidates.create(uniqueLock('cut'), 2, `etcd://127.0.0.1:${proxy.port}`);
      groups.push(g);
      g.start();
      await leaderOf(g);
      await waitFor(() => g.electors.every((e) => e.leader() !== null), 5000, 'both to see the leader');
      const before = proxy.accepted;
      for (let i = 0; i < 3; i++) {
        proxy.cut();
        await sleep(300);
      }
      // Let things settle: whoever leads now, both candidates agree on it.
      const settled = await waitFor(() => {
        const leaders = g.electors.filter((e) => e.isLeader());
        const holder = leaders[0]?.identity;
        return leaders.length === 1 && g.electors.every((e) => e.leader()?.holder === holder) ? leaders[0] : undefined;
      }, 15_000, 'one leader seen by both after the cuts');
      await sleep(TIMING.leaseDurationMs); // long enough for any standby timer to have fired once
      const stoppedAt = performance.now();
      await settled.stop();
      const next = await waitFor(() => g.electedSince(stoppedAt), 5000, 'the standby after a release');
      assert.ok(next.at - stoppedAt < 1000, `handover took ${(next.at - stoppedAt).toFixed(0)} ms: the standby was not notified`);
      assert.ok(proxy.accepted > before, 'the clients reconnected after the cuts');
      report(`handover after 3 cuts: ${(next.at - stoppedAt).toFixed(0)} ms; ${proxy.accepted - before} reconnections`);
      g.assertSafe();
    } finally {
      await proxy.close();
    }
  });

  it('closing stores while the server is down: nothing escapes', async () => {
    const g = await Candidates.create(uniqueLock('close-down'), 2, server.url);
    g.start();
    await leaderOf(g);
    await server.kill();
    await sleep(300);
    await g.stop();
    await sleep(300);
  });
});

/** CuttingProxy forwards loopback TCP to etcd and can drop every connection at once. */
class CuttingProxy {
  accepted = 0;
  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly sockets: Set<Socket>,
  ) {}

  static async start(targetPort: number): Promise<CuttingProxy> {
    const port = await freePort();
    const sockets = new Set<Socket>();
    let proxy: CuttingProxy | undefined;
    const srv = createServer((client) => {
      if (proxy) proxy.accepted++;
      const upstream = connect({ host: '127.0.0.1', port: targetPort });
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
    proxy = new CuttingProxy(srv, port, sockets);
    return proxy;
  }

  cut(): void {
    for (const s of this.sockets) s.resetAndDestroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((r) => this.server.close(r));
  }
}
