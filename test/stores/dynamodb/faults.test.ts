/**
 * A DynamoDB fault beyond the public suite's (kill, restart, freeze, unreachable —
 * test/stores/dynamodb/conformance.test.ts): every connection reset (RST, new ones refused) by a
 * proxy for a second at a time while real electors on short leases renew through it. Failures
 * must surface as store errors, a leader must renew again on new connections, leaderships never
 * overlap and nothing escapes.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { PartitionProxy } from '../../../infra/proxy.js';
import { openDynamoStore } from '../../../src/stores/dynamodb/index.js';
import { Candidates, faultTiming, recordEscapes, uniqueLock } from '../../../src/testing/index.js';
import { startDynalite } from './servers.js';

const server = await startDynalite();
const escapes = recordEscapes();
const groups: Candidates[] = [];
after(() => escapes.stop());
afterEach(async () => {
  await Promise.all(groups.splice(0).map((g) => g.stop()));
  assert.deepEqual(escapes.take(), [], 'nothing escaped as an uncaught exception or unhandled rejection');
});

describe('dynamodb faults', () => {
  it('connections reset for a second at a time: failures are store errors, a leader renews again on new connections', async () => {
    const proxy = new PartitionProxy(server.port);
    await proxy.listen();
    after(() => proxy.close());
    // Requests time out after 500 ms, well inside the renew deadline.
    const viaProxy = () => openDynamoStore({ table: 'baton', endpoint: `http://127.0.0.1:${proxy.port}`, region: 'us-east-1', timeoutMs: 500 });
    const group = await new Candidates(uniqueLock('dynamodb-reset'), faultTiming(2_000)).start(2, viaProxy);
    groups.push(group);
    await group.leader();
    await sleep(500);
    const errorsBefore = group.storeErrors;
    for (let round = 0; round < 3; round++) {
      proxy.cut('reset');
      await sleep(1_000);
      proxy.heal();
      await sleep(1_500);
    }
    await group.assertRecoversFromCuts(errorsBefore);
    assert.deepEqual(escapes.take(), []);
  });
});
