// Watching many locks on one handle costs the server one consumer, not one per lock, and each
// watcher hears only its own lock.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { NatsStore } from '../../../src/stores/nats/index.js';
import { acquireWrite, waitFor } from '../../../src/testing/conformance/context.js';
import { NatsServer } from '../../../infra/servers/index.js';

const server = await new NatsServer().start();
after(() => server.stop());

async function consumers(): Promise<number> {
  const jsz = (await (await fetch(`http://127.0.0.1:${server.monitorPort}/jsz`)).json()) as { consumers?: number };
  return jsz.consumers ?? 0;
}

test('nats: 50 watched locks on one handle share one consumer; each watcher hears only its lock', async () => {
  const watcher = await NatsStore.open({ url: server.url });
  const writer = await NatsStore.open({ url: server.url });
  try {
    const heard = new Map<string, string[]>();
    const stops = Array.from({ length: 50 }, (_, i) => {
      const lock = `feed-${i}`;
      heard.set(lock, []);
      return watcher.watch!(lock, (record) => record && heard.get(lock)!.push(record.holder ?? 'free'));
    });
    await waitFor(() => watcher.watchLive, 5_000, 'the feed running');
    assert.equal(await consumers(), 1, 'one consumer for 50 watched locks');
    assert.ok((await writer.write('feed-7', null, acquireWrite('w'))).ok);
    assert.ok((await writer.write('not-watched', null, acquireWrite('w'))).ok);
    await waitFor(() => heard.get('feed-7')!.includes('w'), 5_000, 'feed-7 heard');
    for (const [lock, holders] of heard) if (lock !== 'feed-7') assert.deepEqual(holders, [], `${lock} heard nothing`);
    for (const stop of stops) stop();
    await waitFor(async () => (await consumers()) === 0, 20_000, 'the consumer gone once nobody watches (the server drops an ephemeral consumer a few seconds after its interest)');
  } finally {
    await watcher.close();
    await writer.close();
  }
});
