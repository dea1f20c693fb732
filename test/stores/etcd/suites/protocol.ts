/**
 * etcdProtocolSuite: the etcd store against a real etcd of the given line — that it speaks etcd's
 * own election protocol (keys, leases, order, fencing token), side by side with the real
 * `etcdctl elect` of the same line; how it queues and wakes candidates; and its URL handling.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { LeaderElector } from '../../../../src/core/elector.js';
import { InvalidConfigError, StoreUnavailableError } from '../../../../src/core/errors.js';
import { requestStepDown } from '../../../../src/core/step-down.js';
import { openStore } from '../../../../src/stores/registry.js';
import type { LeaseRecord, LeaseStore, LeaseWrite } from '../../../../src/core/store.js';
import { parseEtcdUrl } from '../../../../src/stores/etcd/config.js';
import { EtcdStore } from '../../../../src/stores/etcd/index.js';
const open = async (url: string) => EtcdStore.fromUrl(url);
import { etcdBinary, EtcdServer, freePort, type EtcdLine } from '../../../../infra/servers/index.js';

const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_400, retryPeriodMs: 200 };

// Set by etcdProtocolSuite before any test runs (each test file is its own process).
let line: EtcdLine;
let ETCDCTL: string;
let server: EtcdServer;

const stores: LeaseStore[] = [];
const electors: LeaderElector[] = [];
const ctls: CtlElect[] = [];

async function handle(): Promise<LeaseStore> {
  const s = await open(server.url);
  stores.push(s);
  return s;
}

function elector(store: LeaseStore, lock: string, identity: string): LeaderElector {
  const e = new LeaderElector({ store, lock, identity, ...TIMING });
  e.on('storeError', () => {});
  electors.push(e);
  return e;
}

let n = 0;
const uniqueLock = (what: string) => `etcd-${what}-${process.pid}-${n++}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function acquire(holder: string): LeaseWrite {
  const now = Date.now();
  return { holder, newTerm: true, leaseDurationMs: 2000, acquiredAt: now, renewedAt: now, transitions: 1, stepDownRequested: false, metadata: {} };
}
const release = (): LeaseWrite => ({ ...acquire('x'), holder: null, newTerm: false });

async function waitFor<T>(check: () => T | Promise<T>, ms: number, what: string): Promise<NonNullable<T>> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out after ${ms}ms waiting for ${what}`);
    await sleep(20);
  }
}

interface EtcdKey {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
  lease: string;
}

/** keysUnder lists etcd's keys under `prefix`, oldest first, as etcdctl sees them. */
async function keysUnder(prefix: string): Promise<EtcdKey[]> {
  const { stdout } = await promisify(execFile)(ETCDCTL, ['--endpoints', server.endpoint, 'get', '--prefix', prefix, '-w', 'json'], {
    env: { ...process.env, ETCDCTL_API: '3' },
  });
  // Lease IDs are 64-bit: keep them out of JSON.parse's doubles.
  const kvs = (JSON.parse(stdout.replace(/"lease":(\d+)/g, '"lease":"$1"')) as { kvs?: Record<string, string | number>[] }).kvs ?? [];
  return kvs
    .map((kv) => ({
      key: Buffer.from(String(kv.key), 'base64').toString(),
      value: Buffer.from(String(kv.value ?? ''), 'base64').toString(),
      createRevision: Number(kv.create_revision),
      modRevision: Number(kv.mod_revision),
      lease: BigInt(kv.lease ?? 0).toString(16),
    }))
    .sort((a, b) => a.createRevision - b.createRevision);
}

/** CtlElect is one `etcdctl elect LOCK PROPOSAL` participant; it prints its key once elected. */
class CtlElect {
  readonly proc: ChildProcess;
  key?: string;
  private out = '';
  constructor(lock: string, proposal: string) {
    this.proc = spawn(ETCDCTL, ['--endpoints', server.endpoint, 'elect', lock, proposal], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc.stdout!.on('data', (b: Buffer) => {
      this.out += b.toString();
      this.key ??= this.out.split('\n').find((l) => l.startsWith(`${lock}/`));
    });
    ctls.push(this);
  }
  get elected(): boolean {
    return this.key !== undefined;
  }
  /** stop sends SIGTERM: etcdctl resigns (deletes its key) and exits. */
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise((r) => this.proc.once('exit', r));
    this.proc.kill('SIGTERM');
    await exited;
  }
}

export async function etcdProtocolSuite(of: EtcdLine): Promise<void> {
  line = of;
  ETCDCTL = etcdBinary(line, 'etcdctl');
  server = await new EtcdServer(undefined, { line }).start();
  after(() => server.stop());
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
    await Promise.all(ctls.splice(0).map((c) => c.stop()));
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  describe(`etcd (${line}): the election protocol on the wire`, () => {
    it('a candidate is <lock>/<its lease ID in hex>, attached to that lease; the term is its create revision', async () => {
      const lock = uniqueLock('layout');
      const s = await handle();
      const r = await s.queue!.campaign(lock, acquire('alice'));
      assert.ok(r.ok);
      const [k, ...rest] = await keysUnder(`${lock}/`);
      assert.equal(rest.length, 0);
      assert.equal(k!.key, `${lock}/${k!.lease}`, 'named by its own lease, in hex, as etcd does');
      assert.equal(r.record.term, k!.createRevision, 'fencing token = create revision');
      assert.equal(r.record.revision, `${k!.createRevision}:${k!.modRevision}`);
      assert.equal(JSON.parse(k!.value).holder, 'alice');
    });

    it('two candidates racing on one handle get a lease and a key each; the earlier key leads', async () => {
      const lock = uniqueLock('race');
      const s = await handle();
      const [x, y] = await Promise.all([s.queue!.campaign(lock, acquire('x')), s.queue!.campaign(lock, acquire('y'))]);
      assert.equal([x, y].filter((r) => r.ok).length, 1);
      const keys = await keysUnder(`${lock}/`);
      assert.equal(keys.length, 2);
      assert.notEqual(keys[0]!.lease, keys[1]!.lease);
      const winner = (x.ok ? x : y) as { record: LeaseRecord };
      assert.equal(winner.record.term, keys[0]!.createRevision, 'the lowest create revision leads');
      assert.equal((await (await handle()).read(lock))?.holder, winner.record.holder);
    });

    it('the step-down flag rewrites the value under the same lease: same term, new revision', async () => {
      const lock = uniqueLock('flag');
      const [a, b] = [await handle(), await handle()];
      const r = await a.queue!.campaign(lock, acquire('alice'));
      assert.ok(r.ok);
      const before = (await keysUnder(`${lock}/`))[0]!;
      const flagged = await b.write(lock, r.record.revision, { ...acquire('alice'), newTerm: false, stepDownRequested: true });
      assert.ok(flagged.ok);
      const afterFlag = (await keysUnder(`${lock}/`))[0]!;
      assert.equal(afterFlag.key, before.key);
      assert.equal(afterFlag.lease, before.lease);
      assert.equal(afterFlag.createRevision, before.createRevision);
      assert.ok(afterFlag.modRevision > before.modRevision);
      assert.equal(flagged.record.term, r.record.term);
      assert.notEqual(flagged.record.revision, r.record.revision);
      // The holder's next plain renewal is refused with the flagged record, so its elector sees it.
      const renewal = await a.write(lock, r.record.revision, { ...acquire('alice'), newTerm: false });
      assert.equal(renewal.ok, false);
      assert.equal(!renewal.ok && renewal.current?.stepDownRequested, true);
    });

    it('a step-down request reaches the leader through its watch; a standby takes over', async () => {
      const lock = uniqueLock('stepdown');
      const [a, b] = [elector(await handle(), lock, 'alice'), elector(await handle(), lock, 'bob')];
      a.start();
      const first = await a.elected();
      b.start();
      await waitFor(() => b.leader()?.holder === 'alice', 5000, 'bob to see alice');
      const stopped = new Promise<{ reason: string }>((r) => a.once('stopped', r));
      const asked = Date.now();
      const outcome = await requestStepDown(await handle(), lock, { timeoutMs: 5000 });
      assert.equal(outcome.outcome, 'released');
      assert.equal((await stopped).reason, 'step-down-requested');
      const second = await b.elected();
      assert.ok(second.term > first.term);
      assert.ok(Date.now() - asked < TIMING.leaseDurationMs, 'handed over without waiting for the lease');
    });

    it('baton and etcdctl elect are one election: never both leading, in either order', async () => {
      const lock = uniqueLock('interop');
      // 1. etcdctl leads; baton waits and sees etcdctl's proposal as the holder.
      const ctl1 = new CtlElect(lock, 'ctl-one');
      await waitFor(() => ctl1.elected, 10_000, 'etcdctl elected');
      const ctlKey = (await keysUnder(`${lock}/`))[0]!;
      const e = elector(await handle(), lock, 'baton-one');
      e.start();
      await waitFor(() => e.leader()?.holder === 'ctl-one', 5000, 'baton to see etcdctl lead');
      await sleep(TIMING.leaseDurationMs + 500);
      assert.equal(e.isLeader(), false, 'baton must not lead while etcdctl does');
      // 2. etcdctl goes (SIGTERM: it resigns); baton takes over with a higher term.
      await ctl1.stop();
      const won = await Promise.race([e.elected(), sleep(5000).then(() => undefined)]);
      assert.ok(won, 'baton elected after etcdctl left');
      assert.ok(won.term > ctlKey.createRevision);
      // 3. A new etcdctl participant queues behind baton and waits while baton leads.
      const ctl2 = new CtlElect(lock, 'ctl-two');
      await waitFor(async () => (await keysUnder(`${lock}/`)).length === 2, 5000, 'etcdctl to queue');
      await sleep(TIMING.leaseDurationMs + 500);
      assert.equal(ctl2.elected, false, 'etcdctl must not lead while baton does');
      assert.equal(e.isLeader(), true);
      assert.equal((await keysUnder(`${lock}/`))[0]!.createRevision, won.term, "baton's key is first");
      // 4. baton stops (releases); etcdctl takes over at once.
      await e.stop();
      await waitFor(() => ctl2.elected, 3000, 'etcdctl elected after baton released');
    });
  });

  describe(`etcd (${line}): queueing`, () => {
    it('queued candidates wait in creation order; a release wakes only the next in line', async () => {
      const lock = uniqueLock('queue');
      const [ha, hb, hc, hd] = [await handle(), await handle(), await handle(), await handle()];
      const ra = await ha.queue!.campaign(lock, acquire('a'));
      assert.ok(ra.ok);
      const queued = [];
      for (const [h, who] of [[hb, 'b'], [hc, 'c'], [hd, 'd']] as const) {
        const r = await h.queue!.campaign(lock, acquire(who));
        assert.equal(r.ok, false);
        assert.equal(!r.ok && r.current?.holder, 'a');
        queued.push(r);
      }
      const calls = { b: 0, c: 0, d: 0 };
      hb.watch!(lock, () => calls.b++);
      hc.watch!(lock, () => calls.c++);
      hd.watch!(lock, () => calls.d++);
      await sleep(300);
      assert.deepEqual(calls, { b: 0, c: 0, d: 0 });

      assert.ok((await ha.write(lock, ra.record.revision, release())).ok);
      await waitFor(() => calls.b > 0, 3000, 'b woken');
      await sleep(400);
      assert.equal(calls.c + calls.d, 0, 'c and d watch only their predecessors');
      assert.equal((await hb.read(lock))?.holder, 'b', "b's own unclaimed key reads as b's, to b too");
      assert.equal((await hc.read(lock))?.holder, 'b', 'and as b to everyone else');
      const rb = await hb.queue!.campaign(lock, acquire('b'));
      assert.ok(rb.ok, 'b claims at once');
      assert.ok(rb.record.term > ra.record.term);

      assert.ok((await hb.write(lock, rb.record.revision, release())).ok);
      await waitFor(() => calls.c > 0, 3000, 'c woken');
      await sleep(400);
      assert.equal(calls.d, 0);
      const rc = await hc.queue!.campaign(lock, acquire('c'));
      assert.ok(rc.ok);
      assert.ok(rc.record.term > rb.record.term);
    });

    it("a queued key lives while its lock is watched; a leader's only by its renewals", async () => {
      const lock = uniqueLock('liveness');
      const [ha, hb] = [await handle(), await handle()];
      const leader = new LeaderElector({ store: ha, lock, identity: 'leader', ...TIMING, releaseOnStop: false });
      leader.on('storeError', () => {});
      electors.push(leader);
      leader.start();
      await leader.elected();
      const q = await hb.queue!.campaign(lock, acquire('queued'));
      assert.equal(q.ok, false);
      let woken = 0;
      hb.watch!(lock, () => woken++);
      await sleep(TIMING.leaseDurationMs * 2 + 500);
      assert.equal((await keysUnder(`${lock}/`)).length, 2, 'the queued key outlived two TTLs');
      // Renewals are keepalives, not writes; a live leader still reads as recently renewed.
      const seen = await hb.read(lock);
      assert.equal(seen?.holder, 'leader');
      assert.ok(seen.renewedAt + seen.leaseDurationMs > Date.now(), 'a live leader reads as live');
      // The leader stops renewing without releasing; its handle stays open and its lease expires.
      const stoppedAt = Date.now();
      await leader.stop();
      await waitFor(() => woken > 0, 6000, 'the queued candidate woken by the expiry');
      assert.ok(Date.now() - stoppedAt >= TIMING.leaseDurationMs - 500, 'not before the lease could expire');
      const won = await hb.queue!.campaign(lock, acquire('queued'));
      assert.ok(won.ok);
    });

    it('two electors sharing one handle are two candidates: one leads, the other takes over', async () => {
      const lock = uniqueLock('shared');
      const s = await handle();
      const [e1, e2] = [elector(s, lock, 'one'), elector(s, lock, 'two')];
      e1.start();
      e2.start();
      const first = await Promise.race([e1.elected().then((ev) => ({ ev, who: e1 })), e2.elected().then((ev) => ({ ev, who: e2 }))]);
      const other = first.who === e1 ? e2 : e1;
      await sleep(300);
      assert.equal(other.isLeader(), false);
      await first.who.stop();
      const next = await Promise.race([other.elected(), sleep(3000).then(() => undefined)]);
      assert.ok(next, 'the other candidate on the same handle took over');
      assert.ok(next.term > first.ev.term);
    });

    it('a queued candidate whose elector stops gives up its place', async () => {
      const lock = uniqueLock('unwatch');
      const [ha, hb] = [await handle(), await handle()];
      const ra = await ha.queue!.campaign(lock, acquire('a'));
      assert.ok(ra.ok);
      const off = hb.watch!(lock, () => {});
      assert.equal((await hb.queue!.campaign(lock, acquire('b'))).ok, false);
      assert.equal((await keysUnder(`${lock}/`)).length, 2);
      off();
      await waitFor(async () => (await keysUnder(`${lock}/`)).length === 1, 3000, "b's key revoked");
    });
  });

  describe(`etcd (${line}): URLs and failures`, () => {
    it('parses endpoints, prefix, timeout and user info; rejects the rest with one line', () => {
      const multi = parseEtcdUrl('etcd://10.0.0.1:2379,10.0.0.2,[::1]:3379/?prefix=svc/&timeout=500ms');
      assert.deepEqual(multi.connection.hosts, ['http://10.0.0.1:2379', 'http://10.0.0.2:2379', 'http://[::1]:3379']);
      assert.equal(multi.layout.prefix, 'svc/');
      assert.equal(multi.layout.callTimeoutMs, 500);
      const viaUrl = parseEtcdUrl(new URL('etcd://u%40x:p%3Aw@h1:1?endpoints=h2:2,h3:3&ledgerPrefix=L/'));
      assert.deepEqual(viaUrl.connection.hosts, ['http://h1:1', 'http://h2:2', 'http://h3:3']);
      assert.deepEqual(viaUrl.connection.auth, { username: 'u@x', password: 'p:w' });
      assert.equal(viaUrl.layout.ledgerPrefix, 'L/');
      assert.equal(parseEtcdUrl('etcd://h?revocationGuard=off').layout.revocationGuard, 'off');
      for (const bad of ['etcd://', 'etcd://h:0', 'etcd://h:99999', 'etcd://h/path', 'etcd://h?nope=1', 'etcd://h?timeout=5', 'etcd://user@h', 'http://h', 'etcd://h?revocationGuard=maybe']) {
        assert.throws(() => parseEtcdUrl(bad), (err: Error) => err instanceof InvalidConfigError && !err.message.includes('\n'), bad);
      }
    });

    it('opens through the scheme registry and keeps baton under ?prefix=', async () => {
      const lock = uniqueLock('prefixed');
      const s = await openStore(`${server.url}/?prefix=team-a/`);
      stores.push(s);
      assert.equal(s.kind, 'etcd');
      assert.ok((await s.queue!.campaign(lock, acquire('p'))).ok);
      assert.equal((await keysUnder(`team-a/${lock}/`)).length, 1);
      assert.ok((await s.list!()).some((r) => r.lock === lock && r.holder === 'p'));
      const plain = await handle();
      assert.equal(await plain.read(lock), null, 'another prefix is another namespace');
    });

    it('user:password in the URL authenticates; a wrong password is StoreUnavailableError', async () => {
      const secured = await new EtcdServer(undefined, { line }).start();
      try {
        const ctl = (...args: string[]) =>
          promisify(execFile)(ETCDCTL, ['--endpoints', secured.endpoint, ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
        await ctl('user', 'add', 'root:s3cr%t');
        await ctl('user', 'grant-role', 'root', 'root');
        await ctl('auth', 'enable');
        const good = await open(`etcd://root:s3cr%25t@127.0.0.1:${secured.port}`);
        const bad = await open(`etcd://root:nope@127.0.0.1:${secured.port}`);
        try {
          assert.ok((await good.queue!.campaign('authed', acquire('a'))).ok);
          assert.equal((await good.read('authed'))?.holder, 'a');
          await assert.rejects(bad.read('authed'), (err: Error) => err instanceof StoreUnavailableError && !err.message.includes('\n'));
        } finally {
          await Promise.all([good.close(), bad.close()]);
        }
      } finally {
        await secured.stop();
      }
    });

    it('several endpoints: a refused one and a silent one are passed over', async () => {
      const accepted: Socket[] = [];
      const silent = createServer((sock) => void accepted.push(sock.on('error', () => {}))); // accepts, never answers
      await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
      const silentPort = (silent.address() as { port: number }).port;
      const refusedPort = await freePort();
      try {
        const s = EtcdStore.fromUrl(`etcd://127.0.0.1:${refusedPort},127.0.0.1:${silentPort},127.0.0.1:${server.port}?timeout=400ms`);
        stores.push(s);
        const lock = uniqueLock('endpoints');
        const seen: unknown[] = [];
        s.watch(lock, (r) => seen.push(r));
        for (let i = 0; i < 10; i++) {
          const started = Date.now();
          const r = await s.queue!.campaign(`${lock}-${i}`, acquire('multi'));
          assert.ok(r.ok, `write ${i}`);
          assert.ok(Date.now() - started < 3 * 400 + 1000, `write ${i} took ${Date.now() - started} ms`);
        }
        assert.ok((await (await handle()).queue!.campaign(lock, acquire('other'))).ok);
        await waitFor(() => seen.length > 0, 6000, 'a notification through the working endpoint');
        assert.ok(accepted.length > 0, 'the silent endpoint was tried (hosts are shuffled per call)');
      } finally {
        accepted.forEach((sock) => sock.destroy());
        await new Promise((r) => silent.close(r));
      }
    });
  });
}
