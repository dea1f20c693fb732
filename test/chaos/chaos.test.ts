/**
 * Short seeded chaos runs, one per store baton ships: real servers, real candidate processes,
 * every fault kind that applies to the store at least once (chaos/run.ts). A run fails on any
 * accepted stale write, any term that did not grow, any moment two processes' isLeader() were
 * both true, any leaderless gap over leaseDuration + retryPeriod + RTT after a heal, and any
 * fault that did not take effect.
 *
 * STORES lists the stores registered in src/stores/registry.ts when this file was
 * written. A listed store that is not registered fails here loudly; it is never skipped.
 * Long runs (≥ 1,000 failovers) are done by hand: docs/RELIABILITY.md.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ChaosResult } from '../../chaos/checker.js';
import { applicableFaults } from '../../chaos/options.js';
import { STORE_KINDS, isRegistered } from '../../chaos/stores.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STORES: Record<string, number> = { sqlite: 20240601, redis: 20240602, postgres: 20240603, etcd: 20240604, 'etcd-cluster': 20240608, nats: 20240605, mysql: 20240606, zookeeper: 20240609 };

const dir = mkdtempSync(join(tmpdir(), 'baton-chaos-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function runChaos(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'chaos/run.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    // A hung run must not outlive the test: the harness cleans up its servers on SIGTERM.
    const timer = setTimeout(() => child.kill('SIGTERM'), 150_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

for (const [name, seed] of Object.entries(STORES)) {
  test(`chaos: ${name} keeps mutual exclusion through every fault that applies (seed ${seed})`, { timeout: 180_000 }, async () => {
    const kind = STORE_KINDS[name];
    assert.ok(kind, `chaos/stores.ts has no entry for ${name}`);
    assert.ok(isRegistered(kind), `the ${name} store is not registered in src/stores/registry.ts — this test fails rather than skips`);
    const json = join(dir, `${name}.json`);
    const run = await runChaos(['--store', name, '--duration', '20s', '--seed', String(seed), '--json', json]);
    const context = `\n${run.stdout}\n${run.stderr}`;
    const r = JSON.parse(readFileSync(json, 'utf8')) as ChaosResult;
    assert.equal(r.acceptedStaleWrites, 0, `stale writes accepted${context}`);
    assert.deepEqual(r.termViolations, [], `terms did not grow${context}`);
    assert.equal(r.leaseOverlapMs, 0, `two leaders by isLeader()${context}`);
    assert.deepEqual(r.gapsOverBound, [], `leaderless gaps over ${r.boundMs}ms${context}`);
    assert.deepEqual(r.faultsNotSeen, [], `faults without effect${context}`);
    for (const k of applicableFaults(kind)) assert.ok(r.faults[k] >= 1, `no ${k} fault was injected${context}`);
    // Every pause and stall of a leader ends in a failover, so a run this long sees several.
    assert.ok(r.failovers >= 3, `only ${r.failovers} failovers${context}`);
    assert.ok(r.acceptedWrites > 100, `the leaders hardly wrote (${r.acceptedWrites})${context}`);
    assert.equal(run.code, 0, `exit code${context}`);
  });
}
