/**
 * Fault tests for the DynamoDB store with real electors on short leases (lease 2 s, renew
 * deadline 1.4 s, retry 200 ms) against a real dynalite process: killed (SIGKILL) and restarted
 * with its LevelDB data, and frozen (SIGSTOP) past the lease. Leaderships never overlap, terms
 * only grow, nothing escapes. The scenarios are shared with the other stores
 * (test/harness/fault-candidates.ts).
 */
import { afterEach, describe, it } from 'node:test';
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

  it('server frozen (SIGSTOP) longer than the lease: the leader steps down by its deadline; after SIGCONT a leader is elected again', async () => {
    await h.freezeAndThaw(await h.candidates('stop'), server, 20_000);
  });
});
