/**
 * CasWriter (the store's compare-and-set writes through one reply subscription) against a real
 * nats-server: its answers are kv.update's (the new revision is the stream sequence the KV
 * reports, a stale revision loses), many writes in flight are each answered with their own
 * result, and a write that gets no answer fails with StoreUnavailableError after the bound.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createInbox, headers, StorageType, type KV, type NatsConnection } from 'nats';
import { StoreUnavailableError } from '../../../src/core/errors.js';
import { CasWriter } from '../../../src/stores/nats/cas-writer.js';
import { PartitionProxy } from '../../../infra/proxy.js';
import { NatsServer } from '../../../infra/servers/index.js';

const server = await new NatsServer().start();
after(() => server.stop());

const sdk = { headers, createInbox };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

describe('nats CasWriter', () => {
  let nc: NatsConnection;
  let kv: KV;
  before(async () => {
    nc = await connect({ servers: server.url });
    kv = await nc.jetstream().views.kv('writer', { history: 1, storage: StorageType.File });
  });
  after(() => nc.close());

  it('answers as kv.update: the new revision is the KV revision, a stale revision loses', async () => {
    const writer = new CasWriter(nc, sdk, '$KV.writer.', 2_000);
    try {
      const first = await kv.create('lease.a', encoder.encode('v0'));
      const second = await writer.update('lease.a', encoder.encode('v1'), first);
      assert.ok(second !== null);
      const entry = await kv.get('lease.a');
      assert.equal(second, String(entry!.revision));
      assert.equal(decoder.decode(entry!.value), 'v1');
      assert.equal(await writer.update('lease.a', encoder.encode('stale'), first), null, 'a stale revision loses');
      assert.equal(decoder.decode((await kv.get('lease.a'))!.value), 'v1', 'and writes nothing');
      assert.equal(writer.inFlight, 0);
    } finally {
      writer.close();
    }
  });

  it('many writes in flight are each answered with their own result', async () => {
    const writer = new CasWriter(nc, sdk, '$KV.writer.', 5_000);
    try {
      const n = 600;
      const created = await Promise.all(Array.from({ length: n }, (_, i) => kv.create(`many.k${i}`, encoder.encode('0'))));
      // Every third write carries a stale revision and must lose; the rest must win.
      const results = await Promise.all(created.map((rev, i) => writer.update(`many.k${i}`, encoder.encode(`v${i}`), i % 3 === 0 ? rev - 1 : rev)));
      const entries = await Promise.all(created.map((_, i) => kv.get(`many.k${i}`)));
      for (let i = 0; i < n; i++) {
        if (i % 3 === 0) {
          assert.equal(results[i], null, `write ${i} lost`);
          assert.equal(decoder.decode(entries[i]!.value), '0');
        } else {
          assert.equal(results[i], String(entries[i]!.revision), `write ${i} has its own key's revision`);
          assert.equal(decoder.decode(entries[i]!.value), `v${i}`);
        }
      }
      assert.equal(new Set(results.filter((r) => r !== null)).size, n - n / 3, 'every winner has its own revision');
      assert.equal(writer.inFlight, 0);
    } finally {
      writer.close();
    }
  });

  it('a write nobody answers fails with StoreUnavailableError after the bound, and later writes still work', async () => {
    const proxy = new PartitionProxy(server.port);
    await proxy.listen();
    const cut = await connect({ servers: `127.0.0.1:${proxy.port}` });
    const writer = new CasWriter(cut, sdk, '$KV.writer.', 300);
    try {
      const rev = await kv.create('lease.timeout', encoder.encode('0'));
      proxy.cut('blackhole');
      const started = performance.now();
      const outcomes = await Promise.allSettled(Array.from({ length: 50 }, () => writer.update('lease.timeout', encoder.encode('1'), rev)));
      const waited = performance.now() - started;
      for (const o of outcomes) {
        assert.equal(o.status, 'rejected');
        assert.ok(o.reason instanceof StoreUnavailableError, String(o.reason));
        assert.match(o.reason.message, /^nats: update timed out after 300 ms$/);
      }
      assert.ok(waited >= 290 && waited < 2_000, `timed out after ${Math.round(waited)} ms`);
      assert.equal(writer.inFlight, 0);
      proxy.heal();
      // The held writes arrive after the heal (one of them wins; their late answers are ignored).
      await cut.flush();
      const now = (await kv.get('lease.timeout'))!.revision;
      assert.equal(now, rev + 1, 'one held write was applied after the heal');
      assert.equal(await writer.update('lease.timeout', encoder.encode('2'), now), String(now + 1));
    } finally {
      writer.close();
      await cut.close();
      await proxy.close();
    }
  });

  it('no stream on the subject is a StoreUnavailableError; close fails what is in flight and refuses more', async () => {
    const writer = new CasWriter(nc, sdk, '$KV.nosuchbucket.', 2_000);
    await assert.rejects(writer.update('lease.x', encoder.encode('1'), 1), (err: Error) => err instanceof StoreUnavailableError && /no responders/.test(err.message));
    const proxy = new PartitionProxy(server.port);
    await proxy.listen();
    const cut = await connect({ servers: `127.0.0.1:${proxy.port}` });
    const held = new CasWriter(cut, sdk, '$KV.writer.', 10_000);
    try {
      proxy.cut('blackhole');
      const pending = held.update('lease.a', encoder.encode('x'), 1);
      held.close();
      await assert.rejects(pending, StoreUnavailableError);
      await assert.rejects(held.update('lease.a', encoder.encode('x'), 1), /store is closed/);
    } finally {
      writer.close();
      await cut.close().catch(() => {});
      await proxy.close();
    }
  });
});
