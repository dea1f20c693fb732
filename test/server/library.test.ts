/**
 * The server and metrics as a library, in-process on the memory store: createLeaderServer's
 * routes, instrumentElector with a caller's registry (two locks, close), the bounded timeline's
 * classification, secret scrubbing, the token check and --listen parsing.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Registry } from 'prom-client';
import { LeaderElector } from '../../src/core/elector.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { instrumentElector } from '../../src/metrics/index.js';
import { Timeline, createLeaderServer, scrubSecrets, tokenMatches } from '../../src/server/index.js';
import { parseListen } from '../../src/cli/listen.js';
import { getJson, metric, parsePrometheus } from './serve-harness.js';

const TIMING = { leaseDurationMs: 2000, renewDeadlineMs: 1400, retryPeriodMs: 400 };
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('createLeaderServer: routes, readiness before the elector starts, and JSON errors', async () => {
  const store = new MemoryStore();
  const elector = new LeaderElector({ store, lock: 'lib', identity: 'lib-a', ...TIMING });
  const server = createLeaderServer(elector, { storeLabel: 'memory://u:pw-s3cr3t-Q@x/y' });
  cleanups.push(() => server.close(), () => elector.stop());
  const { url } = await server.listen(0);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, 'binds loopback by default');

  assert.equal((await getJson(`${url}/readyz`)).status, 503);
  const before = (await getJson(`${url}/leader`)).body;
  assert.deepEqual([before.holder, before.term, before.isSelf, before.ready], [null, 0, false, false]);
  assert.equal((await getJson(`${url}/healthz`)).status, 200, 'a candidate that never led is healthy');

  elector.start();
  await elector.elected();
  const v = (await getJson(`${url}/leader`)).body;
  assert.deepEqual([v.holder, v.isSelf, v.ready, v.identity], ['lib-a', true, true, 'lib-a']);
  assert.equal((await getJson(`${url}/readyz`)).status, 200);

  assert.equal((await getJson(`${url}/nope`)).status, 404);
  const wrongMethod = await fetch(`${url}/leader`, { method: 'DELETE' });
  assert.equal(wrongMethod.status, 405);
  assert.equal(wrongMethod.headers.get('allow'), 'GET');
  assert.equal((await getJson(`${url}/step-down`, { method: 'POST' })).status, 403);
  const state = (await getJson(`${url}/api/state`)).body;
  assert.equal(state.store, 'memory://u:***@x/y');
  assert.equal(state.locks[0].lock, 'lib');
  const page = await fetch(`${url}/`);
  const csp = page.headers.get('content-security-policy') ?? '';
  const html = await page.text();
  const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
  assert.ok(nonce && html.includes(`<script nonce="${nonce}">`), 'inline script carries the CSP nonce');
  assert.ok(!html.includes('s3cr3t'), 'the page itself embeds no store details');
});

test('the event stream sends a snapshot, then updates and timeline entries as leadership changes', async () => {
  const store = new MemoryStore();
  const a = new LeaderElector({ store, lock: 'sse', identity: 'sse-a', ...TIMING }).start();
  await a.elected();
  const b = new LeaderElector({ store, lock: 'sse', identity: 'sse-b', ...TIMING }).start();
  const server = createLeaderServer(b);
  cleanups.push(() => server.close(), () => a.stop(), () => b.stop());
  const { url } = await server.listen(0);
  const ac = new AbortController();
  const res = await fetch(`${url}/events`, { signal: ac.signal });
  assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const reader = res.body!.getReader();
  let text = '';
  const until = async (re: RegExp) => {
    const deadline = Date.now() + 10_000;
    while (!re.test(text)) {
      if (Date.now() > deadline) throw new Error(`no ${re} in:\n${text}`);
      const { value } = await reader.read();
      text += Buffer.from(value!).toString();
    }
  };
  await until(/event: snapshot\ndata: .*"holder":"sse-a"/);
  await a.stop(); // releases: b takes over at once
  await until(/event: timeline\ndata: .*"kind":"released"/);
  await until(/event: timeline\ndata: .*"kind":"acquired".*"holder":"sse-b"/);
  await until(/event: update\ndata: .*"isSelf":true/);
  ac.abort();
});

test('instrumentElector: a caller registry, two locks, transitions counted once, close drops the series', async () => {
  const registry = new Registry();
  const store = new MemoryStore();
  const x = new LeaderElector({ store, lock: 'x', identity: 'x1', ...TIMING });
  const y = new LeaderElector({ store, lock: 'y', identity: 'y1', ...TIMING });
  const mx = instrumentElector(x, { registry });
  assert.equal(instrumentElector(x, { registry }), mx, 'instrumenting twice returns the same handle');
  const my = instrumentElector(y, { registry });
  cleanups.push(() => x.stop(), () => y.stop());
  x.start();
  y.start();
  await Promise.all([x.elected(), y.elected()]);
  await new Promise<void>((r) => x.once('renewed', () => r()));
  let s = parsePrometheus(await registry.metrics()).samples;
  for (const lock of ['x', 'y']) {
    assert.equal(metric(s, 'baton_is_leader', { lock }), 1);
    assert.equal(metric(s, 'leader_election_master_status', { name: lock }), 1);
    assert.equal(metric(s, 'baton_term', { lock }), 1);
    assert.equal(metric(s, 'baton_leader_transitions_total', { lock }), 1);
  }
  assert.ok(metric(s, 'baton_renew_duration_seconds_count', { lock: 'x' })! >= 1);
  await x.resign(); // released, then re-acquired by x (the only candidate) with a new term
  await new Promise<void>((r) => (x.isLeader() ? r() : x.once('elected', () => r())));
  s = parsePrometheus(await registry.metrics()).samples;
  assert.equal(metric(s, 'baton_term', { lock: 'x' }), 2);
  assert.equal(metric(s, 'baton_leader_transitions_total', { lock: 'x' }), 2, 'a free lease between two terms is not a transition of its own');
  my.close();
  s = parsePrometheus(await registry.metrics()).samples;
  assert.equal(metric(s, 'baton_is_leader', { lock: 'y' }), undefined);
  assert.equal(metric(s, 'leader_election_master_status', { name: 'y' }), undefined, 'close drops the client-go series too');
  assert.equal(metric(s, 'leader_election_master_status', { name: 'x' }), 1);
  assert.equal(metric(s, 'baton_is_leader', { lock: 'x' }), 1);
  mx.close();
});

test('Timeline: observed, failover (with the gap since the last renewal), released, acquired; stale sightings ignored; bounded', () => {
  let now = 1_000;
  const t = new Timeline(4, () => now);
  assert.equal(t.see('free', null), undefined, 'a lock seen free records nothing…');
  assert.equal(t.see('free', { holder: 'z', term: 1 })?.kind, 'acquired', '…and its first holder acquired it');
  assert.equal(t.see('l', { holder: 'a', term: 1, acquiredAt: 900, renewedAt: 900 })?.kind, 'observed');
  assert.equal(t.see('l', { holder: 'a', term: 1, renewedAt: 1_500 }), undefined, 'a renewal is not a change');
  now = 2_000;
  const f = t.see('l', { holder: 'b', term: 2, acquiredAt: 3_600, renewedAt: 3_600 });
  assert.deepEqual([f?.kind, f?.previousHolder, f?.afterLastRenewalMs], ['failover', 'a', 2_100]);
  assert.equal(t.see('l', { holder: 'a', term: 1 }), undefined, 'an older term is stale');
  assert.equal(t.current('l')?.since, 2_000);
  assert.deepEqual([t.see('l', { holder: null, term: 2 })?.kind, t.entries().at(-1)?.previousHolder], ['released', 'b']);
  const acq = t.see('l', { holder: 'c', term: 3 });
  assert.deepEqual([acq?.kind, acq?.previousHolder], ['acquired', 'b']);
  assert.deepEqual(t.entries().map((e) => e.kind), ['observed', 'failover', 'released', 'acquired'], 'only the last 4 are kept');
});

test('scrubSecrets, tokenMatches and parseListen', () => {
  assert.equal(scrubSecrets('connect failed: postgres://app:hunter2@db:5432/x (ECONNREFUSED)'), 'connect failed: postgres://app:***@db:5432/x (ECONNREFUSED)');
  assert.equal(scrubSecrets('redis://:pw@h:6379/0'), 'redis://:***@h:6379/0');
  assert.equal(scrubSecrets('etcd://h:2379?password=pw&x=1'), 'etcd://h:2379?password=***&x=1');
  assert.equal(scrubSecrets('sqlite:/var/lib/baton.db'), 'sqlite:/var/lib/baton.db');
  assert.equal(tokenMatches('abc12345', 'abc12345'), true);
  assert.equal(tokenMatches('abc1234', 'abc12345'), false);
  assert.equal(tokenMatches(undefined, 'abc12345'), false);
  assert.deepEqual(parseListen('127.0.0.1:4040'), { host: '127.0.0.1', port: 4040 });
  assert.deepEqual(parseListen(':0'), { host: '127.0.0.1', port: 0 });
  assert.deepEqual(parseListen('4041'), { host: '127.0.0.1', port: 4041 });
  assert.deepEqual(parseListen('[::1]:4040'), { host: '::1', port: 4040 });
  assert.deepEqual(parseListen('0.0.0.0:80'), { host: '0.0.0.0', port: 80 });
  for (const bad of ['', 'host:', 'h:65536', 'h:-1', 'a:b:c:1']) assert.throws(() => parseListen(bad), /--listen/);
});

test('/leader, /healthz, /readyz and /metrics never read the store', async () => {
  const inner = new MemoryStore();
  let reads = 0;
  // Counts every read-type call the server (or anyone) makes; writes (renewals) pass through.
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if ((prop === 'read' || prop === 'list') && typeof v === 'function') {
        return (...args: unknown[]) => {
          reads++;
          return v.apply(target, args);
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const elector = new LeaderElector({ store, lock: 'cheap', identity: 'cheap-a', ...TIMING }).start();
  await elector.elected();
  const server = createLeaderServer(elector);
  cleanups.push(() => server.close(), () => elector.stop());
  const { url } = await server.listen(0);
  const before = reads;
  for (let i = 0; i < 100; i++) {
    for (const path of ['/leader', '/healthz', '/readyz', '/metrics']) assert.equal((await fetch(`${url}${path}`)).status, 200);
  }
  assert.equal(reads - before, 0, `${reads - before} store reads for 400 requests`);
});
