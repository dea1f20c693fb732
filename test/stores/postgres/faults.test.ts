/**
 * A PostgreSQL-only fault, beyond the public suite's (kill, restart, freeze, cut connections,
 * cut LISTEN sessions — test/stores/postgres/conformance.test.ts): the candidates' connections
 * cut by pg_terminate_backend while a renewal is held up by an admin's row lock. Real electors
 * on short leases against a real PostgreSQL 15; leaderships never overlap, nothing escapes.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { PostgresStore } from '../../../src/stores/postgres/index.js';
import { Candidates, faultTiming, recordEscapes, uniqueLock, waitFor } from '../../../src/testing/index.js';
import { PostgresServer } from '../../../infra/servers/index.js';

const server = await new PostgresServer().start();
const escapes = recordEscapes();
const groups: Candidates<PostgresStore>[] = [];
after(async () => {
  escapes.stop();
  await server.stop();
});
afterEach(async () => {
  await Promise.all(groups.splice(0).map((g) => g.stop()));
  assert.deepEqual(escapes.take(), [], 'nothing escaped as an uncaught exception or unhandled rejection');
});

describe('postgres faults', () => {
  it('connections cut (pg_terminate_backend) while a renewal waits on a row lock: nothing escapes, the elector recovers or steps down', async () => {
    const timing = faultTiming(2_000);
    // Each candidate has its own pool and LISTEN session, tagged by application_name = the lock.
    const group = await new Candidates<PostgresStore>(uniqueLock('pg-term'), timing).start(
      2,
      (lock) => new PostgresStore({ connectionString: `${server.url}?application_name=${lock}&heartbeat=500ms` }),
    );
    groups.push(group);
    const admin = new pg.Client({ connectionString: `${server.url}?application_name=baton_admin` });
    admin.on('error', () => {});
    await admin.connect();
    try {
      await group.leader();
      await sleep(500);
      const errorsBefore = group.storeErrors;
      for (let round = 0; round < 4; round++) {
        // Hold the lease row so the leader's next renewal is in flight, waiting, when its connection is cut.
        await admin.query('BEGIN');
        await admin.query('SELECT 1 FROM baton_leases WHERE lock = $1 FOR UPDATE', [group.lock]);
        await sleep(timing.retryPeriodMs + 150);
        const { rows } = await admin.query(
          `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS waiting, count(pg_terminate_backend(pid))::int AS cut
           FROM pg_stat_activity WHERE application_name = $1`,
          [group.lock],
        );
        assert.ok(rows[0].waiting >= 1, `a renewal was waiting on the row lock when cut (round ${round})`);
        assert.ok(rows[0].cut >= 2, `cut ${rows[0].cut} connections`);
        await admin.query('ROLLBACK');
        await sleep(400);
      }
      await group.assertRecoversFromCuts(errorsBefore);
      await waitFor(() => group.stores.every((s) => s.listening), 5_000, 'LISTEN sessions back');
      assert.deepEqual(escapes.take(), []);
    } finally {
      await admin.query('ROLLBACK').catch(() => {});
      await admin.end().catch(() => {});
    }
  });
});
