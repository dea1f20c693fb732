/**
 * Three real `baton run` processes against one DynamoDB implementation (run*.test.ts: dynalite,
 * moto). Needs the build (bin/baton.js); the children inherit the loopback AWS environment set by
 * ./servers.js.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { startDynamoServer, type DynamoImplementation } from './servers.js';

/** dynamoRunScenario starts a server of `kind` and runs the three-candidate scenario on it. */
export async function dynamoRunScenario(kind: DynamoImplementation): Promise<void> {
  const server = await startDynamoServer(kind);
  test(`dynamodb (${kind}): three candidates under baton run: SIGKILL fails over after the lease, SIGTERM hands over at once`, async () => {
    // A request timeout inside the scenario's 1.5 s renew deadline (the default, 5 s an attempt, is
    // for default timing): a request lost on a dropped connection then costs a standby one second,
    // not the SDK's three attempts of five.
    const r = await runThreeCandidateScenario({ storeUrl: `${server.url('baton')}&timeout=1000`, name: `dynamodb-${kind}` });
    assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms);
    assert.equal(new Set(r.terms).size, r.terms.length, 'every leadership has its own term');
    process.stdout.write(`# dynamodb (${kind}) scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms\n`);
  });
}
