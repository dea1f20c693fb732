/**
 * What the conformance suite cannot see about the Redis store: its key layout and TTLs, what it
 * publishes (and what it does not), keyspace-event expiry, re-subscription after a restart,
 * NOSCRIPT recovery, an application-owned client, URL options and server-setting checks.
 * Everything runs against a real redis-server 7 started on a free port.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { InvalidConfigError, StoreUnavailableError } from '../../../src/core/errors.js';
import { openStore, parseStoreUrl } from '../../../src/stores/registry.js';
import type { LeaseRecord, LeaseStore, LeaseWrite } from '../../../src/core/store.js';
import { LeaderElector } from '../../../src/core/elector.js';
import { RedisStore } from '../../../src/stores/redis/index.js';
import { parseRedisUrl } from '../../../src/stores/redis/options.js';
import { freePort, RedisServer } from '../../../infra/servers/index.js';

const server = await new RedisServer().start();
const admin = new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
admin.on('error', () => {});
const opened: LeaseStore[] = [];
after(async () => {
  await Promise.all(opened.map((s) => s.close()));
  admin.disconnect();
  await server.stop();
});

async function store(query = ''): Promise<RedisStore> {
  const s = await new RedisStore({ url: server.url + query }).verify();
  opened.push(s);
  return s;
}

let n = 0;
const lockName = (what: string) => `redis-${what}-${process.pid}-${n++}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function acquire(holder: string, leaseDurationMs = 5_000): LeaseWrite {
  const now = Date.now();
  return { holder, newTerm: true, leaseDurationMs, acquiredAt: now, renewedAt: now, transitions: 1, stepDownRequested: false, metadata: { pid: 1 } };
}
const renew = (r: LeaseRecord, extra: Partial<LeaseWrite> = {}): LeaseWrite => ({ ...acquire(r.holder ?? 'x', r.leaseDurationMs), newTerm: false, ...extra });

async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('redis: key layout', () => {
  it('a held lease is a hash with a server-side TTL; the counter has none and outlives a release', async () => {
    const s = await store();
    const lock = lockName('layout');
    const r = await s.write(lock, null, acquire('alice', 3_000));
    assert.ok(r.ok);
    const pttl = await admin.pttl(`baton:{${lock}}:lease`);
    assert.ok(pttl > 2_000 && pttl <= 3_000, `lease PTTL ${pttl}`);
    assert.deepEqual(await admin.hmget(`baton:{${lock}}:lease`, 'holder', 'term', 'rev'), ['alice', String(r.record.term), r.record.revision]);
    assert.equal(await admin.pttl(`baton:{${lock}}:counter`), -1, 'the counter never expires');
    const released = await s.write(lock, r.record.revision, { ...renew(r.record), holder: null });
    assert.ok(released.ok);
    assert.equal(released.record.holder, null);
    assert.equal(await admin.exists(`baton:{${lock}}:lease`), 0, 'release deletes the lease key');
    assert.equal(await admin.hget(`baton:{${lock}}:counter`, 'term'), String(r.record.term));
    assert.equal(await s.read(lock), null);
  });

  it('?prefix= puts every key under another prefix', async () => {
    const s = await store('?prefix=app1:');
    const lock = lockName('prefix');
    assert.ok((await s.write(lock, null, acquire('alice'))).ok);
    assert.equal(await admin.exists(`app1:{${lock}}:lease`, `app1:{${lock}}:counter`), 2);
    assert.equal(await admin.exists(`baton:{${lock}}:lease`), 0);
    assert.ok((await s.list()).some((r) => r.lock === lock));
    assert.ok(!(await (await store()).list()).some((r) => r.lock === lock), 'other prefixes do not see it');
  });

  it('renewals change the revision and reset the TTL; a step-down request keeps the time left', async () => {
    const s = await store();
    const lock = lockName('ttl');
    const first = await s.write(lock, null, acquire('alice', 3_000));
    assert.ok(first.ok);
    await sleep(300);
    const renewed = await s.write(lock, first.record.revision, renew(first.record));
    assert.ok(renewed.ok);
    assert.notEqual(renewed.record.revision, first.record.revision);
    assert.ok((await admin.pttl(`baton:{${lock}}:lease`)) > 2_800, 'renewal restarts the lease');
    await sleep(300);
    const before = await admin.pttl(`baton:{${lock}}:lease`);
    const flagged = await s.write(lock, renewed.record.revision, renew(renewed.record, { stepDownRequested: true }));
    assert.ok(flagged.ok && flagged.record.stepDownRequested);
    const afterFlag = await admin.pttl(`baton:{${lock}}:lease`);
    assert.ok(afterFlag <= before, `the flag write must not lengthen the lease (${before} → ${afterFlag})`);
  });

  it('a lost term counter never lets a new term fall to or below the live lease', async () => {
    const s = await store();
    const lock = lockName('lostcounter');
    const first = await s.write(lock, null, acquire('alice'));
    assert.ok(first.ok);
    await admin.del(`baton:{${lock}}:counter`);
    const taken = await s.write(lock, first.record.revision, acquire('bob'));
    assert.ok(taken.ok);
    assert.ok(taken.record.term > first.record.term, `term ${taken.record.term} after ${first.record.term}`);
  });

  it('ledger entries have no TTL', async () => {
    const s = await store();
    const key = `${lockName('ledger')}/slot`;
    assert.ok((await s.ledger.put(key, null, 'done')).ok);
    assert.equal(await admin.pttl(`baton:ledger:${key}`), -1);
  });
});

describe('redis: notification', () => {
  it('watchers get the record itself on every write, renewals included (a standby times the expiry from them), null on release', async () => {
    const [writer, watcher] = [await store(), await store()];
    const lock = lockName('notify');
    const raw = admin.duplicate();
    raw.on('error', () => {});
    let published = 0;
    raw.on('message', () => published++);
    await raw.subscribe(`baton:{${lock}}:events`);
    const seen: (LeaseRecord | null | undefined)[] = [];
    const off = watcher.watch(lock, (r) => seen.push(r));
    try {
      await sleep(200); // the watcher's subscription settles
      const a = await writer.write(lock, null, acquire('alice'));
      assert.ok(a.ok);
      const got = (await until('the acquisition', () => seen.find((r) => r?.holder === 'alice')))!;
      assert.equal(got.term, a.record.term);
      assert.equal(got.revision, a.record.revision);
      assert.equal(got.metadata.pid, 1);
      let cur = a.record;
      const renewals: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await writer.write(lock, cur.revision, renew(cur));
        assert.ok(r.ok);
        cur = r.record;
        renewals.push(cur.revision);
      }
      // The renewal-only batch publishes too.
      const [batched] = await writer.renewRevisions!([{ lock, expected: cur.revision, renewedAt: 7, leaseDurationMs: 3_000 }]);
      assert.ok(batched);
      renewals.push(batched);
      cur = { ...cur, revision: batched, renewedAt: 7 };
      const heard = await until('the batched renewal', () => seen.find((r) => r?.revision === batched));
      assert.equal(heard!.holder, 'alice');
      assert.equal(heard!.term, a.record.term);
      assert.equal(heard!.renewedAt, 7);
      const flagged = await writer.write(lock, cur.revision, renew(cur, { stepDownRequested: true }));
      assert.ok(flagged.ok);
      await until('the step-down flag', () => seen.find((r) => r?.stepDownRequested));
      assert.ok((await writer.write(lock, flagged.record.revision, { ...renew(flagged.record), holder: null })).ok);
      await until('the release', () => seen.includes(null));
      await sleep(100);
      assert.equal(published, 9, 'acquisition, six renewals, step-down flag and release are published');
      assert.deepEqual(seen.map((r) => (r === null ? 'null' : r === undefined ? 'read' : r.stepDownRequested ? 'flag' : r.holder)), ['alice', ...renewals.map(() => 'alice'), 'flag', 'null']);
      assert.deepEqual(seen.slice(1, 1 + renewals.length).map((r) => r?.revision), renewals);
    } finally {
      off();
      raw.disconnect();
    }
  });

  it('a handle hears its own renewals without decoding them, and every other change of its leases whole', async () => {
    const [own, other] = [await store(), await store()];
    for (const holder of ['alice', 'al"i\\ce","0","{\\"renewedAt\\":1,']) {
      const lock = lockName('own');
      const seen: LeaseRecord[] = [];
      const off = own.watch(lock, (r) => r && seen.push(r));
      try {
        await until('the subscription', () => own.watchLive);
        const w = await own.write(lock, null, acquire(holder));
        assert.ok(w.ok);
        await until('the acquisition', () => seen.length === 1);
        let cur = w.record;
        for (let i = 1; i <= 3; i++) {
          const renewedAt = Date.now() + i;
          const [revision] = await own.renewRevisions([{ lock, expected: cur.revision, renewedAt, leaseDurationMs: cur.leaseDurationMs }]);
          assert.ok(revision);
          cur = { ...cur, renewedAt, revision };
          await until(`renewal ${i}`, () => seen.length === 1 + i);
          assert.deepEqual(seen[i], cur);
        }
        // The decoder took the second and third renewals as renewals of the record before (its metadata object is reused).
        assert.equal(seen[3]!.metadata, seen[2]!.metadata);
        // Every other write, whatever it keeps of the record, is heard as it was written.
        const writes: LeaseWrite[] = [
          { ...renew(cur), renewedAt: cur.renewedAt, metadata: { pid: 2 } },
          { ...renew(cur), metadata: { pid: 2 }, transitions: 5 },
          { ...renew(cur), metadata: { pid: 2 }, transitions: 5, stepDownRequested: true },
          { ...acquire('bob') },
        ];
        for (const next of writes) {
          const r = await other.write(lock, cur.revision, next);
          assert.ok(r.ok);
          cur = r.record;
          await until(`the write by ${next.holder}`, () => seen.at(-1)?.revision === cur.revision);
          assert.deepEqual({ ...seen.at(-1) }, { ...cur });
        }
      } finally {
        off();
      }
    }
  });

  it('a lease the server expires is reported as null through keyspace events', async () => {
    const [writer, watcher] = [await store(), await store()];
    const lock = lockName('expired');
    const seen: (LeaseRecord | null | undefined)[] = [];
    const off = watcher.watch(lock, (r) => seen.push(r));
    try {
      assert.equal(await until('the watcher to read the setting', () => watcher.expiryEvents !== 'unknown' && watcher.expiryEvents), 'enabled');
      const r = await writer.write(lock, null, acquire('alice', 300));
      assert.ok(r.ok);
      const t0 = Date.now();
      await until('the expiry', () => seen.includes(null), 3_000);
      assert.ok(Date.now() - t0 >= 250, 'not before the lease');
    } finally {
      off();
    }
  });

  it('with keyspace events off, a standby still takes over a crashed leader at its own computed expiry', async () => {
    await admin.config('SET', 'notify-keyspace-events', '');
    const electors: LeaderElector[] = [];
    try {
      const [sa, sb] = [await store(), await store()];
      const lock = lockName('nokeyevents');
      const timing = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 };
      const a = new LeaderElector({ store: sa, lock, identity: 'alice', releaseOnStop: false, ...timing });
      const b = new LeaderElector({ store: sb, lock, identity: 'bob', ...timing });
      electors.push(a, b);
      a.start();
      const won = await a.elected();
      b.start();
      await until('bob to see alice', () => b.leader()?.holder === 'alice');
      assert.equal(await until('the watcher to read the setting', () => sb.expiryEvents !== 'unknown' && sb.expiryEvents), 'disabled');
      const crashedAt = Date.now();
      await a.stop(); // no release: the key must expire on the server
      const next = await b.elected();
      const waited = Date.now() - crashedAt;
      assert.ok(next.term > won.term);
      assert.ok(waited >= 400 && waited < 600 * 3 + 1_000, `takeover after ${waited}ms`);
    } finally {
      await Promise.all(electors.map((e) => e.stop()));
      await admin.config('SET', 'notify-keyspace-events', 'Ex');
    }
  });
});

describe('redis: restarts and reconnects', () => {
  it('after a server restart, watchers are re-subscribed, told to re-read (undefined), then hear changes again', async () => {
    const [writer, watcher] = [await store(), await store()];
    const lock = lockName('resub');
    const seen: (LeaseRecord | null | undefined)[] = [];
    const off = watcher.watch(lock, (r) => seen.push(r));
    try {
      await sleep(200);
      const a = await writer.write(lock, null, acquire('alice'));
      assert.ok(a.ok);
      await until('the acquisition', () => seen.length === 1);
      await server.restart();
      // Listeners are woken when the connection drops (watchLive false: electors poll), and
      // again once every channel is subscribed after the reconnect.
      await until('the re-read signal after the reconnect', () => watcher.watchLive && seen.filter((r) => r === undefined).length >= 2, 10_000);
      assert.ok(seen.slice(1).every((r) => r === undefined), 'nothing but wake-ups meanwhile');
      // Terms survived (appendfsync always); scripts were flushed (NOSCRIPT) and are re-sent.
      const cur = (await until('the store to answer', () => writer.read(lock).catch(() => undefined), 10_000))!;
      assert.equal(cur.term, a.record.term);
      const released = await writer.write(lock, cur.revision, { ...renew(cur), holder: null });
      assert.ok(released.ok);
      await until('the release after the reconnect', () => seen.includes(null));
    } finally {
      off();
    }
  });

  it('renewMany recovers from an empty script cache (SCRIPT FLUSH) in the same call', async () => {
    const s = await store();
    const locks = [lockName('flush'), lockName('flush'), lockName('flush')];
    const held = await Promise.all(locks.map((l) => s.write(l, null, acquire('alice'))));
    await admin.script('FLUSH');
    const results = await s.renewMany(held.map((r, i) => {
      assert.ok(r.ok);
      return { lock: locks[i]!, expected: r.record.revision, next: renew(r.record) };
    }));
    assert.deepEqual(results.map((r) => r.ok), [true, true, true]);
  });

  it('open() refuses a dead server promptly, with one line naming the URL', async () => {
    const port = await freePort();
    const started = Date.now();
    await assert.rejects(openStore(`redis://127.0.0.1:${port}?timeout=300ms`), (err: Error) => {
      assert.ok(err instanceof StoreUnavailableError, String(err));
      assert.match(err.message, /^redis: redis:\/\/127\.0\.0\.1:\d+\?timeout=300ms: connect: /);
      return true;
    });
    assert.ok(Date.now() - started < 2_000, 'open gave up promptly');
  });
});

describe('redis: an application-owned client', () => {
  let client: Redis;
  before(() => {
    client = new Redis({ port: server.port, host: '127.0.0.1', lazyConnect: true });
    client.on('error', () => {});
  });
  after(() => client.disconnect());

  it('works through the given client, watches through a duplicate, and leaves the client open on close', async () => {
    const s = new RedisStore({ client, prefix: 'owned:' });
    const other = await store('?prefix=owned:');
    const lock = lockName('owned');
    const seen: (LeaseRecord | null | undefined)[] = [];
    s.watch(lock, (r) => seen.push(r));
    await sleep(200);
    assert.ok((await other.write(lock, null, acquire('alice'))).ok);
    await until('the acquisition through the duplicate', () => seen.some((r) => r?.holder === 'alice'));
    assert.equal((await s.read(lock))?.holder, 'alice');
    await s.close();
    assert.equal(await client.ping(), 'PONG', 'the application still owns its client');
  });
});

describe('redis: configuration', () => {
  it('parses URL options and rejects bad ones with one line naming the problem', () => {
    const c = parseRedisUrl(new URL('rediss://user:s3cret@example.com:6380/2?prefix=x:&timeout=750ms'));
    assert.deepEqual({ ...c, label: undefined }, {
      host: 'example.com', port: 6380, username: 'user', password: 's3cret', db: 2, tls: true, prefix: 'x:', timeoutMs: 750, label: undefined,
    });
    assert.doesNotMatch(c.label, /s3cret/);
    const d = parseRedisUrl(new URL('redis://localhost'));
    assert.equal(d.port, 6379);
    assert.equal(d.db, 0);
    assert.equal(d.prefix, 'baton:');
    assert.equal(d.timeoutMs, 2_000);
    for (const [url, pattern] of [
      ['redis://h/abc', /database "abc"/],
      ['redis://h?colour=red', /unknown URL option "colour"/],
      ['redis://h?timeout=2', /timeout: "2" is not a duration/],
      ['redis://h?prefix=a*b', /prefix "a\*b"/],
    ] as const) {
      assert.throws(() => parseRedisUrl(new URL(url)), (err: Error) => err instanceof InvalidConfigError && pattern.test(err.message) && !err.message.includes('\n'));
    }
    // Checked before any connection opens (a leaked reconnecting client would keep this file alive).
    assert.throws(() => new RedisStore({ url: server.url, prefix: 'a b' }), InvalidConfigError);
    assert.throws(() => new RedisStore({ url: server.url, timeoutMs: 0 }), InvalidConfigError);
    assert.throws(() => new RedisStore({}), /give a url/);
    assert.equal(parseStoreUrl('redis://127.0.0.1:1').scheme, 'redis');
    assert.equal(parseStoreUrl('rediss://127.0.0.1:1').scheme, 'rediss');
  });

  it('refuses a server that may evict keys (maxmemory with a policy other than noeviction)', async () => {
    await admin.config('SET', 'maxmemory', '512mb');
    await admin.config('SET', 'maxmemory-policy', 'volatile-lru');
    try {
      await assert.rejects(openStore(server.url), (err: Error) => err instanceof InvalidConfigError && /maxmemory-policy volatile-lru/.test(err.message));
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '0');
    }
    const s = await openStore(server.url);
    opened.push(s);
    assert.equal(s.kind, 'redis');
  });
});
