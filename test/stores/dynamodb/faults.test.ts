/**
 * Fault tests for the DynamoDB store with real electors on short leases (lease 2 s, renew
 * deadline 1.4 s, retry 200 ms) against a real dynalite process: killed (SIGKILL) and restarted
 * with its LevelDB data, frozen (SIGSTOP) past the lease, and every connection reset (RST, new
 * ones refused) by a proxy for a second at a time. Leaderships never overlap, terms
 * only grow, nothing escapes. The scenarios are shared with the other stores
 * (test/harness/fault-candidates.ts).
 */
import { after, afterEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PartitionProxy } from '../../../chaos/proxy.js';
import { openDynamoStore } from '../../../src/stores/dynamodb/index.js';
import { FaultHarness } from '../../harness/fault-candidates.js';
import { openOn, startDynalite } from './dynalite.js';

const server = await startDynalite();
// Each candidate has its own store handle (its own client and connections); requests time out
// after 500 ms so a frozen server fails calls well inside the renew deadline.
const h = new FaultHarness('dynamodb', () => openOn(server, 'baton', 500));
afterEach(() => h.cleanup());

describe('dynamodb faults', () => {
  it('server killed while a leader holds: it steps down by its deadline; after a restart a leader is elected again', async () => {
    await h.killAndRestart(await h.candidates('kill'), server, 20_000);
  });

  it('connections reset for a second at a time: failures are store errors, a leader renews again on new connections', async () => {
    const proxy = new PartitionProxy(server.port);
    await proxy.listen();
    after(() => proxy.close());
    const viaProxy = () => openDynamoStore({ table: 'baton', endpoint: `http://127.0.0.1:${proxy.port}`, region: 'us-east-1', timeoutMs: 500 });
    const group = await h.candidates('reset', { makeStore: viaProxy });
    await group.leader();
    await sleep(500);
    const errorsBefore = group.storeErrors;
    for (let round = 0; round < 3; round++) {
      proxy.cut('reset');
      await sleep(1_000);
      proxy.heal();
      await sleep(1_500);
    }
    await h.assertRecoversFromCuts(group, errorsBefore, 'connection resets', 3);
  });

  it('server frozen (SIGSTOP) longer than the lease: the leader steps down by its deadline; after SIGCONT a leader is elected again', async () => {
    await h.freezeAndThaw(await h.candidates('stop'), server, 20_000);
  });
});
