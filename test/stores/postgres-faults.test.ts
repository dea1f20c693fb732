/**
 * Fault tests for the PostgreSQL store with real electors on short leases (lease 2 s, renew
 * deadline 1.4 s, retry 200 ms) against a real PostgreSQL 15: the server killed (SIGKILL) and
 * restarted; the whole server frozen (SIGSTOP on the postmaster and every backend) for longer
 * than the lease; and the candidates' connections cut by pg_terminate_backend while a renewal
 * is held up by an admin's row lock. Leaderships must never overlap, terms must only grow, and
 * no exception may escape (uncaughtException / unhandledRejection). Bounds are generous: these
 * tests prove behaviour; measuring it is for benchmarks. The scenarios shared with the other
 * stores are in test/harness/fault-candidates.ts.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { waitFor } from '../../src/testing/conformance/context.js';
import { FaultHarness, TIMING, type Pausable } from '../harness/fault-candidates.js';
import { PostgresServer } from '../../infra/servers/index.js';

const server = await new PostgresServer().start();
after(() => server.stop());

/** Each candidate has its own pool and LISTEN session, tagged by application_name = the lock. */
const h = new FaultHarness('postgres', (lock) => new PostgresStore({ connectionString: `${server.url}?application_name=${lock}&heartbeat=500ms` }));
afterEach(() => h.cleanup());

/**
 * wholeServer freezes the whole server. The harness's pause() stops only the postmaster, whose
 * backends keep serving connections already open; a frozen machine stops them all.
 */
let frozen: number[] = [];
const wholeServer: Pausable = {
  pause() {
    const postmaster = server.pid!;
    process.kill(postmaster, 'SIGSTOP'); // first, so no new backend is forked meanwhile
    const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    for (const pid of children) process.kill(pid, 'SIGSTOP');
    frozen = [postmaster, ...children];
  },
  resume() {
    for (const pid of frozen.splice(0).reverse()) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // exited meanwhile
      }
    }
  },
};

describe('postgres faults', () => {
  it('LISTEN session cut: watchers are woken and watchLive is false until LISTEN is back, then they are woken again', async () => {
    const store = new PostgresStore({ connectionString: `${server.url}?application_name=feedcut&heartbeat=500ms` });
    const admin = new pg.Client({ connectionString: `${server.url}?application_name=baton_admin` });
    admin.on('error', () => {});
    await admin.connect();
    try {
      const heard: { record: unknown; live: boolean }[] = [];
      const stop = store.watch!('feedcut', (record) => heard.push({ record, live: store.watchLive }));
      await waitFor(() => store.watchLive, 5_000, 'LISTEN in place');
      const { rows } = await admin.query(`SELECT count(pg_terminate_backend(pid))::int AS cut FROM pg_stat_activity WHERE application_name = 'feedcut'`);
      assert.ok(rows[0].cut >= 1, 'the LISTEN session was cut');
      await waitFor(() => heard.some((h) => h.record === undefined && !h.live), 5_000, 'a wake-up while the feed is down');
      await waitFor(() => store.watchLive && heard.some((h) => h.record === undefined && h.live), 5_000, 'a wake-up once LISTEN is back');
      stop();
    } finally {
      await admin.end().catch(() => {});
      await store.close();
    }
  });

  it('server killed while a leader holds: it steps down by its deadline; after a restart a leader is elected again', async () => {
    await h.killAndRestart(await h.candidates('kill'), server);
  });

  it('whole server frozen (SIGSTOP) longer than the lease: the leader steps down by its deadline; after SIGCONT a leader is elected again', async () => {
    await h.freezeAndThaw(await h.candidates('stop'), wholeServer);
  });

  it('connections cut (pg_terminate_backend) while a renewal waits on a row lock: nothing escapes, the elector recovers or steps down', async () => {
    const group = await h.candidates('term');
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
        await sleep(TIMING.retryPeriodMs + 150);
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
      await h.assertRecoversFromCuts(group, errorsBefore, 'pg_terminate_backend', 4);
      await waitFor(() => group.stores.every((s) => s.listening), 5_000, 'LISTEN sessions back');
      group.assertNoOverlap();
      h.assertNothingEscaped();
    } finally {
      await admin.query('ROLLBACK').catch(() => {});
      await admin.end().catch(() => {});
    }
  });
});
