// A removed ledger entry leaves nothing in the bucket's stream: remove purges the key on its
// revision and then drops the purge's own marker, so a registry that sees many short-lived
// candidates does not grow the stream by one marker per name.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { NatsStore } from '../../../src/stores/nats/index.js';
import { NatsServer } from '../../../infra/servers/index.js';

const server = await new NatsServer().start();
after(() => server.stop());

/** streamMessages is how many messages the `baton` bucket's stream holds (the monitor's word). */
async function streamMessages(): Promise<number> {
  type Jsz = { account_details?: { stream_detail?: { name: string; state: { messages: number } }[] }[] };
  const jsz = (await (await fetch(`http://127.0.0.1:${server.monitorPort}/jsz?streams=true`)).json()) as Jsz;
  const stream = (jsz.account_details ?? []).flatMap((a) => a.stream_detail ?? []).find((s) => s.name === 'KV_baton');
  assert.ok(stream, 'the bucket stream is listed');
  return stream.state.messages;
}

test('nats: removing ledger entries leaves the stream as it was', async () => {
  const store = await NatsStore.open({ url: server.url });
  try {
    const ledger = store.ledger;
    assert.ok((await ledger.put('keep/one', null, 'x')).ok);
    const before = await streamMessages();
    for (let i = 0; i < 20; i++) {
      const made = await ledger.put(`gone/${i}`, null, 'a');
      assert.ok(made.ok);
      const again = await ledger.put(`gone/${i}`, made.entry.version, 'b');
      assert.ok(again.ok);
      assert.equal(await ledger.remove!(`gone/${i}`, again.entry.version), true);
    }
    assert.equal(await streamMessages(), before, 'no message (value or marker) of a removed key is left');
    assert.deepEqual((await ledger.list('gone/')).length, 0);
    assert.equal((await ledger.get('keep/one'))?.value, 'x', 'other keys untouched');
  } finally {
    await store.close();
  }
});
