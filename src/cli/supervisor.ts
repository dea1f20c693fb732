/**
 * Supervisor runs one command under the watchdog (cli/watchdog.ts) for one leadership window
 * and keeps the watchdog's deadlines in step with the window's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { KillSchedule, LeadershipWindow } from './leadership-window.js';

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

/** Offset from performance.now() to CLOCK_MONOTONIC, in ms. */
const MONO_OFFSET_MS = Number(process.hrtime.bigint()) / 1e6 - performance.now();
const toNs = (perfMs: number) => BigInt(Math.round((perfMs + MONO_OFFSET_MS) * 1e6)).toString();

/**
 * Supervisor starts the watchdog with the window's deadline and pushes the deadline forward
 * each time the window is extended (a renewal). It does not watch for the window's end: the
 * term runner (term-runner.ts) does, and calls stop().
 */
export class Supervisor {
  private readonly child: ChildProcess;
  readonly exited: Promise<CommandExit>;
  private offExtended: () => void;
  private lastKillAtMs: number;

  constructor(window: LeadershipWindow, argv: string[], env: NodeJS.ProcessEnv) {
    const first = window.deadline();
    this.lastKillAtMs = first.killAtMs;
    const watchdog = fileURLToPath(new URL('./watchdog.js', import.meta.url));
    this.child = spawn(process.execPath, [watchdog, toNs(first.termAtMs), toNs(first.killAtMs), ...argv], {
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      env,
    });
    // A failed IPC write is reported through send()'s callback; never let it crash baton.
    this.child.on('error', () => {});
    let spawnError: string | undefined;
    let spawnExitCode = 127;
    let exit: CommandExit | undefined;
    this.child.on('message', (m: { type: string; code?: number | null; signal?: NodeJS.Signals | null; message?: string; stoppedAtDeadline?: boolean; exitCode?: number }) => {
      if (m.type === 'exit') exit = { code: m.code ?? null, signal: m.signal ?? null, stoppedAtDeadline: !!m.stoppedAtDeadline };
      if (m.type === 'error') {
        spawnError = m.message;
        // 126: there but not executable; 127: not found (as a shell says).
        if (m.exitCode === 126 || m.exitCode === 127) spawnExitCode = m.exitCode;
      }
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.offExtended();
        resolve(spawnError ? { code: spawnExitCode, signal: null, spawnError } : exit ?? { code: code ?? null, signal });
      });
    });
    this.offExtended = window.onExtended(() => this.push(window.deadline()));
  }

  /**
   * stop asks the command to end now: SIGTERM at once, SIGKILL at the instant the last renewal
   * allowed (sooner than any other candidate can acquire), or `graceMs` from now if sooner.
   */
  stop(graceMs = Infinity): void {
    this.offExtended();
    const now = performance.now();
    this.push({ termAtMs: now, killAtMs: Math.max(now, Math.min(this.lastKillAtMs, now + graceMs)) });
  }

  /** signal forwards a signal to the command's process group. */
  signal(signal: NodeJS.Signals): void {
    this.send({ type: 'signal', signal });
  }

  private push(s: KillSchedule): void {
    this.lastKillAtMs = s.killAtMs;
    this.send({ type: 'deadline', termAtNs: toNs(s.termAtMs), killAtNs: toNs(s.killAtMs) });
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
