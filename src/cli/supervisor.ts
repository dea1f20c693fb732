/**
 * Supervisor runs one command under the watchdog (cli/watchdog.ts) for one leadership term and
 * keeps the watchdog's deadlines in step with the elector's renewals.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LeaderElector } from '../core/elector.js';

/** How a supervised command ended. */
export interface CommandExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the command could not be started at all. */
  spawnError?: string;
  /**
   * Set when the watchdog stopped the command at the leader's deadline (or at stop()), even if
   * baton — frozen, or behind on its events — has not noticed yet that its leadership ended.
   */
  stoppedAtDeadline?: boolean;
}

/** Offset from performance.now() (the elector's clock) to CLOCK_MONOTONIC, in ms. */
const MONO_OFFSET_MS = Number(process.hrtime.bigint()) / 1e6 - performance.now();
const toNs = (perfMs: number) => BigInt(Math.round((perfMs + MONO_OFFSET_MS) * 1e6)).toString();

/**
 * killSchedule: the command is sent SIGTERM at the leader's deadline and SIGKILL halfway
 * between the deadline and the moment another candidate could acquire the lease.
 */
export function killSchedule(renewStartMs: number, timing: { leaseDurationMs: number; renewDeadlineMs: number }) {
  const termAt = renewStartMs + timing.renewDeadlineMs;
  const killAt = termAt + (timing.leaseDurationMs - timing.renewDeadlineMs) / 2;
  return { termAt, killAt };
}

export class Supervisor {
  private readonly child: ChildProcess;
  readonly exited: Promise<CommandExit>;
  private offRenewed: () => void;

  constructor(elector: LeaderElector, argv: string[], env: NodeJS.ProcessEnv) {
    const first = elector.leadershipWindow();
    const { termAt, killAt } = killSchedule(first?.renewStartMs ?? performance.now() - elector.timing.renewDeadlineMs, elector.timing);
    this.lastKillAt = killAt;
    const watchdog = fileURLToPath(new URL('./watchdog.js', import.meta.url));
    this.child = spawn(process.execPath, [watchdog, toNs(termAt), toNs(killAt), ...argv], {
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      env,
    });
    // A failed IPC write is reported through send()'s callback; never let it crash baton.
    this.child.on('error', () => {});
    let spawnError: string | undefined;
    let exit: CommandExit | undefined;
    this.child.on('message', (m: { type: string; code?: number | null; signal?: NodeJS.Signals | null; message?: string; stoppedAtDeadline?: boolean }) => {
      if (m.type === 'exit') exit = { code: m.code ?? null, signal: m.signal ?? null, stoppedAtDeadline: !!m.stoppedAtDeadline };
      if (m.type === 'error') spawnError = m.message;
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.offRenewed();
        resolve(spawnError ? { code: 127, signal: null, spawnError } : exit ?? { code: code ?? null, signal });
      });
    });
    const onRenewed = () => {
      const w = elector.leadershipWindow();
      if (w) this.push(killSchedule(w.renewStartMs, elector.timing));
    };
    elector.on('renewed', onRenewed);
    this.offRenewed = () => elector.off('renewed', onRenewed);
  }

  /**
   * stop asks the command to end now: SIGTERM at once, SIGKILL at the instant the last renewal
   * allowed (sooner than any other candidate can acquire), or `graceMs` from now if sooner.
   */
  stop(graceMs = Infinity): void {
    this.offRenewed();
    const now = performance.now();
    this.push({ termAt: now, killAt: Math.max(now, Math.min(this.lastKillAt, now + graceMs)) });
  }

  /** signal forwards a signal to the command's process group. */
  signal(signal: NodeJS.Signals): void {
    this.send({ type: 'signal', signal });
  }

  private lastKillAt = performance.now();

  private push(s: { termAt: number; killAt: number }): void {
    this.lastKillAt = s.killAt;
    this.send({ type: 'deadline', termAtNs: toNs(s.termAt), killAtNs: toNs(s.killAt) });
  }

  /**
   * send tells the watchdog something. The watchdog may exit between the `connected` check and
   * the write (the command ended); the message is then moot, so the EPIPE is swallowed here
   * rather than surfacing as an unhandled 'error' event.
   */
  private send(message: object): void {
    if (!this.child.connected) return;
    this.child.send(message, () => {});
  }
}
