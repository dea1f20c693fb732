import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { explain, HANDOVER_ROUND_TRIPS } from '../../src/cli/explain.js';
import { DEFAULT_TIMING } from '../../src/core/options.js';
import { freePort } from '../../infra/servers/index.js';
import { TempDir, cleanEnv, runCli } from '../harness/cli.js';

const dir = new TempDir();
after(() => dir.remove());
const env = cleanEnv(dir.path);

describe('explain: the figures follow the formulas', () => {
  test('defaults on a notifying store with a measured round trip', () => {
    const e = explain(DEFAULT_TIMING, { notifies: true, serverExpiry: false, rttMs: { p50: 2, max: 5 } });
    assert.deepEqual(e.crashFailoverMs, { best: 15_000 - 2_000 + 2, worst: 15_000 + 5 });
    assert.deepEqual(e.gracefulHandoverMs, { typical: HANDOVER_ROUND_TRIPS * 2, worst: HANDOVER_ROUND_TRIPS * 5 });
    assert.equal(e.safetyMarginMs, 5_000);
    assert.equal(e.driftTolerance, 5_000 / 15_000);
    assert.equal(e.renewalsBeforeStepDown, 5);
    assert.deepEqual(e.requestsPerSecond, { leader: 0.5, standby: 0 });
    assert.deepEqual(e.warnings, []);
  });

  test('a polling store: standbys read once per mean jittered retry period, and notice late', () => {
    const t = { leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000, jitterFactor: 1.2 };
    const e = explain(t, { notifies: false, serverExpiry: false, rttMs: { p50: 10, max: 10 } });
    assert.equal(e.requestsPerSecond.standby, 1000 / (1000 * 1.6));
    assert.equal(e.crashFailoverMs.worst, 6_000 + 1_000 * 2.2 + 10);
    assert.equal(e.gracefulHandoverMs!.worst, 3 * 10 + 2_200);
  });

  test('a store that rounds leases up and sweeps late (etcd): the effective lease, and a warning', () => {
    const t = { leaseDurationMs: 2_500, renewDeadlineMs: 1_500, retryPeriodMs: 400, jitterFactor: 1.2 };
    const e = explain(t, { notifies: true, serverExpiry: true, leaseGranularityMs: 1_000, expirySweepMs: 500 });
    assert.equal(e.timing.effectiveLeaseDurationMs, 3_000);
    assert.equal(e.crashFailoverMs.worst, 3_000 + 500);
    assert.equal(e.gracefulHandoverMs, null);
    assert.ok(e.warnings.some((w) => /rounds the lease up to 3000 ms/.test(w)), e.warnings.join('\n'));
  });

  test('risky settings are warned about: a thin margin, too few renewals, a slow store', () => {
    const t = { leaseDurationMs: 3_000, renewDeadlineMs: 2_500, retryPeriodMs: 1_000, jitterFactor: 1.2 };
    const e = explain(t, { notifies: true, serverExpiry: false, rttMs: { p50: 400, max: 600 } });
    assert.equal(e.warnings.length, 3, e.warnings.join('\n'));
    assert.match(e.warnings[0]!, /safety margin \(lease − renew deadline = 500 ms\)/);
    assert.match(e.warnings[1]!, /only 2 renewal attempt/);
    assert.match(e.warnings[2]!, /round trip \(up to 600 ms seen\)/);
  });
});

describe('baton explain', () => {
  test('measures a reachable store and prints the figures as JSON', async () => {
    const seed = await runCli(['lock', '--store', dir.sqlite('a.db'), '--lock', 'x', '--at-most-for', '5s', '--', 'true'], { env });
    assert.ok(existsSync(dir.join('a.db')), seed.stderr);
    const r = await runCli(['explain', '--store', dir.sqlite('a.db'), '--lease-duration', '6s', '--renew-deadline', '4s', '--retry-period', '1s', '--json'], { env });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { measured: boolean; crashFailoverMs: { best: number; worst: number }; requestsPerSecond: { leader: number } };
    assert.equal(out.measured, true);
    assert.ok(out.crashFailoverMs.best >= 5_000 && out.crashFailoverMs.worst >= 6_000 && out.crashFailoverMs.worst < 6_100);
    assert.equal(out.requestsPerSecond.leader, 1);
  });

  test('a store that does not exist yet is not created; the text says the round trip was not measured', async () => {
    const r = await runCli(['explain', '--store', dir.sqlite('new.db')], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /round trip not measured/);
    assert.match(r.stdout, /crash failover {5}13s to 15s/);
    assert.equal(existsSync(dir.join('new.db')), false);
  });

  test('an unreachable store: said so, figures still printed', async () => {
    const port = await freePort();
    const r = await runCli(['explain', '--store', `redis://127.0.0.1:${port}?timeout=300ms`, '--json'], { env, timeoutMs: 20_000 });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { measured: boolean; note: string };
    assert.equal(out.measured, false);
    assert.match(out.note, /could not reach the store/);
  });

  test('bad timing is a one-line 78 before anything is opened', async () => {
    const r = await runCli(['explain', '--store', dir.sqlite('b.db'), '--lease-duration', '1s', '--renew-deadline', '2s'], { env });
    assert.equal(r.code, 78);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.equal(existsSync(dir.join('b.db')), false);
  });
});
