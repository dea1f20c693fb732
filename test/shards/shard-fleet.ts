/**
 * A fleet of real `baton shards` processes for the process tests of issue 28's shard features
 * (cli-metrics.test.ts, cli-health.test.ts): each shard's child is
 * test/fixtures/watchdog/child.py writing its own log, `$LOGS/shard-<i>.log`, so who runs which
 * shard, and since when, is read from the children themselves, not from baton.
 */
import { fileURLToPath } from 'node:url';
import { BatonProcess, TempDir, cleanEnv, pidAlive, readChildLog, waitFor, type LogLine } from '../harness/cli.js';

const CHILD_PY = fileURLToPath(new URL('../fixtures/watchdog/child.py', import.meta.url));

/** FLEET_TIMING: short leases; the progress timeout leaves children room to start on a loaded machine (watchdog.md). */
export const FLEET_TIMING = { leaseMs: 2000, renewDeadlineMs: 1500, retryMs: 250 } as const;

/** ShardFleet: members started with `start`, and what their children wrote. */
export class ShardFleet {
  readonly dir = new TempDir();
  readonly storeUrl: string;
  readonly group: string;
  readonly env: NodeJS.ProcessEnv;
  readonly members = new Map<string, BatonProcess>();

  constructor(
    name: string,
    readonly shards: number,
    childEnv: NodeJS.ProcessEnv,
  ) {
    this.storeUrl = this.dir.sqlite('shards.db');
    this.group = `${name}-${process.pid}-${Date.now().toString(36)}`;
    this.env = cleanEnv(this.dir.path, { LOGS: this.dir.path, ...childEnv });
  }

  /** start runs `baton shards` as `identity` with the fleet's timing and `flags`. */
  start(identity: string, flags: string[]): BatonProcess {
    const t = FLEET_TIMING;
    const p = new BatonProcess(['shards', '--store', this.storeUrl, '--group', this.group, '--shards', String(this.shards), '--identity', identity,
      '--lease-duration', `${t.leaseMs}ms`, '--renew-deadline', `${t.renewDeadlineMs}ms`, '--retry-period', `${t.retryMs}ms`, ...flags,
      // `exec` keeps the pid, so WATCHDOG_PID (the command's pid) is python's own, as child.py checks.
      '--', 'sh', '-c', `CHILD_LOG="$LOGS/shard-$BATON_SHARD.log" exec python3 ${CHILD_PY}`], { env: this.env });
    this.members.set(identity, p);
    return p;
  }

  /** logOf is what the children of `shard` wrote, in order. */
  logOf(shard: number): LogLine[] {
    return readChildLog(this.dir.join(`shard-${shard}.log`));
  }

  /** starts lists the start lines of `shard`'s children (by `identity` if given). */
  starts(shard: number, identity?: string): LogLine[] {
    return this.logOf(shard).filter((l) => l.kind === 'start' && (identity === undefined || l.identity === identity));
  }

  /** running maps each shard to its running child (the last start line, if no stop line followed and it lives). */
  running(): Map<number, LogLine> {
    const out = new Map<number, LogLine>();
    for (let s = 0; s < this.shards; s++) {
      const last = this.logOf(s).at(-1);
      if (last?.kind === 'start' && pidAlive(last.pid)) out.set(s, last);
    }
    return out;
  }

  /** perMember is how many shards each member runs, sorted ("2,2"). */
  perMember(): string {
    const c = new Map<string, number>();
    for (const l of this.running().values()) c.set(l.identity, (c.get(l.identity) ?? 0) + 1);
    return [...c.values()].sort().join(',');
  }

  /** settled waits until every shard runs and the members run `spread` ("2,2") of them. */
  async settled(spread: string, ms = 40_000): Promise<Map<number, LogLine>> {
    await waitFor(`every shard running, ${spread}`, () => this.running().size === this.shards && this.perMember() === spread, ms, 50).catch((err: Error) => {
      throw new Error(`${err.message}${this.context()}`);
    });
    return this.running();
  }

  /** urlOf waits for a member's `--listen` line and returns the URL it serves on. */
  urlOf(identity: string): Promise<string> {
    const p = this.members.get(identity)!;
    return waitFor(`${identity} to listen`, () => {
      if (p.done) throw new Error(`${identity} exited early:\n${p.stderr}`);
      return /serving \/metrics and \/healthz on (http:\/\/[0-9.:[\]]+)/.exec(p.stderr)?.[1];
    }, 20_000);
  }

  /** context is every shard's log and every member's stderr, for a failure message. */
  context(): string {
    return '\n' + Array.from({ length: this.shards }, (_, s) => `shard ${s}: ${this.logOf(s).map((l) => `${l.kind} t${l.term} ${l.pid} ${l.identity}`).join(' | ')}`).join('\n') +
      '\n' + [...this.members].map(([id, b]) => `--- ${id} stderr:\n${b.stderr}`).join('\n');
  }

  /** stop kills every member (and, with them, their children's watchdogs) and removes the directory. */
  async stop(stopped: number[] = []): Promise<void> {
    for (const pid of stopped) {
      if (!pidAlive(pid)) continue;
      try {
        process.kill(pid, 'SIGCONT');
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await Promise.all([...this.members.values()].map((b) => b.kill()));
    this.dir.remove();
  }
}
