/**
 * ChangeFeed's probe policy, on a scripted client (an EventEmitter that answers queries at once):
 * the LISTEN session is probed with SELECT 1 only when it has gone quiet for a heartbeat, since
 * a notification proves it alive just as well. A real server cannot be told to notify on a
 * schedule while counting statements per session; the feed's life against a real PostgreSQL
 * (restart, freeze, cut) is tested in postgres-faults.test.ts.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChangeFeed, type ListenClient } from '../../../src/stores/postgres/listener.js';

class ScriptedClient extends EventEmitter implements ListenClient {
  readonly statements: string[] = [];
  async query(config: { text: string }): Promise<unknown> {
    this.statements.push(config.text);
    return {};
  }
  notify(payload: string): void {
    this.emit('notification', { channel: 'baton', payload, processId: 1 });
  }
}

function feedOn(client: ScriptedClient, heard: string[]): ChangeFeed {
  return new ChangeFeed({
    channel: () => 'baton',
    open: async () => ({ client, close: () => {} }),
    heartbeatMs: 100,
    queryTimeoutMs: 1000,
    onPayload: (p) => heard.push(p),
    onResubscribed: () => {},
    onLost: () => {},
    onError: () => {},
  });
}

test('a quiet LISTEN session is probed every heartbeat; one that keeps hearing notifications is not', async () => {
  const quiet = new ScriptedClient();
  const busy = new ScriptedClient();
  const heard: string[] = [];
  const a = feedOn(quiet, []);
  const b = feedOn(busy, heard);
  a.start();
  b.start();
  const ticker = setInterval(() => busy.notify('renewed'), 30);
  try {
    await sleep(650);
  } finally {
    clearInterval(ticker);
    a.stop();
    b.stop();
  }
  const probes = (c: ScriptedClient) => c.statements.filter((s) => s === 'SELECT 1').length;
  assert.equal(quiet.statements[0], 'LISTEN "baton"');
  assert.ok(probes(quiet) >= 4, `quiet session probed ${probes(quiet)} times in 650 ms at a 100 ms heartbeat`);
  assert.ok(heard.length >= 15, `notifications delivered (${heard.length})`);
  assert.equal(probes(busy), 0, 'a session that heard a notification within the heartbeat is not probed');
});
