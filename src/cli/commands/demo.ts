import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { examples } from '../help.js';
import { SqliteStore } from '../../stores/sqlite/index.js';
import type { LeaseRecord } from '../../core/store.js';
import { CliExit } from '../common.js';

const LEASE = { lease: '2s', renew: '1500ms', retry: '250ms' };

/** register adds `baton demo`: three candidates, a crash failover and a graceful handover. */
export function register(program: Command): void {
  program
    .command('demo')
    .summary('watch three candidates elect, fail over after kill -9, and hand over on SIGTERM')
    .description(
      'Starts three `baton run` candidates on a temporary embedded store with short leases ' +
        `(lease ${LEASE.lease}, renew deadline ${LEASE.renew}, retry ${LEASE.retry}), kills the leader with SIGKILL, ` +
        'then stops the next leader with SIGTERM, and reports how long each change of leader took.',
    )
    .addHelpText('after', examples([['the 30-second tour (needs nothing but baton)', 'baton demo']]))
    .action(async () => {
      throw new CliExit(await demo());
    });
}

async function demo(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-demo-'));
  const dbPath = join(dir, 'demo.db');
  const store = new SqliteStore(dbPath, { pollIntervalMs: 20 });
  const main = fileURLToPath(new URL('../main.js', import.meta.url));
  const started = performance.now();
  const t = () => `${((performance.now() - started) / 1000).toFixed(2).padStart(6)}s`;
  const say = (s: string) => process.stdout.write(`${t()}  ${s}\n`);
  const procs = new Map<string, ChildProcess>();
  let current: LeaseRecord | null = null;
  let changed: (() => void) | undefined;

  const onRecord = (r: LeaseRecord | null | undefined) => {
    if (!r || r.holder === null) {
      if (current?.holder) say(`lease free (last term ${r?.term ?? current.term})`);
      current = r ?? null;
      return;
    }
    if (current?.holder === r.holder && current.term === r.term) return;
    current = r;
    say(`leader: ${r.holder}  term ${r.term}  pid ${r.metadata.pid}`);
    changed?.();
  };
  const off = store.watch('demo', (r) => onRecord(r === undefined ? null : r));
  const nextLeader = (notHolder: string | null, ms = 15_000) =>
    new Promise<LeaseRecord>((resolve, reject) => {
      const check = () => {
        if (current?.holder && current.holder !== notHolder) {
          changed = undefined;
          clearTimeout(timer);
          resolve(current);
        }
      };
      const timer = setTimeout(() => reject(new Error('demo: no leader elected in time')), ms);
      changed = check;
      check();
    });

  try {
    process.stdout.write(`baton demo: 3 candidates on ${dbPath}\n`);
    for (const name of ['alpha', 'bravo', 'charlie']) {
      const child = spawn(
        process.execPath,
        [main, 'run', '--store', `sqlite:${dbPath}`, '--lock', 'demo', '--identity', name,
          '--lease-duration', LEASE.lease, '--renew-deadline', LEASE.renew, '--retry-period', LEASE.retry,
          '--', process.execPath, '-e', 'setInterval(() => {}, 1e9)'],
        { stdio: ['ignore', 'ignore', process.env.BATON_DEMO_VERBOSE ? 'inherit' : 'ignore'] },
      );
      procs.set(name, child);
      say(`started candidate ${name} (pid ${child.pid})`);
    }
    const first = await nextLeader(null);
    await delay(1500);
    say(`kill -9 ${first.holder} (its lease has ${LEASE.lease} to run out)`);
    const killedAt = performance.now();
    procs.get(first.holder!)!.kill('SIGKILL');
    const second = await nextLeader(first.holder);
    const failoverMs = performance.now() - killedAt;
    await delay(1500);
    say(`SIGTERM ${second.holder} (graceful: it releases the lease)`);
    const termAt = performance.now();
    procs.get(second.holder!)!.kill('SIGTERM');
    const third = await nextLeader(second.holder);
    const handoverMs = performance.now() - termAt;
    process.stdout.write(
      `\ncrash failover:    ${failoverMs.toFixed(0)} ms  (kill -9 of ${first.holder}; bounded by the ${LEASE.lease} lease)\n` +
        `graceful handover: ${handoverMs.toFixed(0)} ms  (SIGTERM of ${second.holder}; ${third.holder} was notified)\n` +
        `terms: ${first.term} → ${second.term} → ${third.term} (the fencing token only grows)\n`,
    );
    return 0;
  } finally {
    off();
    for (const p of procs.values()) p.kill('SIGKILL');
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function delay(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
