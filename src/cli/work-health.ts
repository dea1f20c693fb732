/**
 * WorkHealth: leadership bound to the health of the work, for commands that run a child while
 * leading (`baton run --progress-timeout D`, `--health-cmd CMD`; issue 28, docs/watchdog.md).
 *
 * Once per baton process it makes a private directory (mode 0700) holding the heartbeat file and
 * the notify socket (notify-socket.ts); for each term it gives the command the systemd watchdog
 * environment — NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID (set to the command's own pid by the
 * watchdog process) — and BATON_HEARTBEAT_FILE, and watches the term (progress-watch.ts).
 */
import { Command, Option } from 'commander';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDuration } from '../core/duration.js';
import { InvalidConfigError, UsageError } from '../core/errors.js';
import { MAX_DURATION_MS } from '../core/options.js';
import { realClock, type Clock } from '../core/clock.js';
import { NotifySocket } from './notify-socket.js';
import { ProgressWatch, type HealthCheck } from './progress-watch.js';

/** WorkHealthFlags are the flags, as commander gives them. */
export interface WorkHealthFlags {
  progressTimeout?: string;
  healthCmd?: string;
  healthInterval?: string;
  healthFailures?: string;
}

/** WorkHealthSettings: the flags checked. Neither set: the work's health is not watched. */
export interface WorkHealthSettings {
  readonly progressTimeoutMs?: number;
  readonly health?: HealthCheck;
}

/** PROGRESS_MIN_MS: a shorter --progress-timeout or --health-interval cannot be kept on a loaded host. */
export const PROGRESS_MIN_MS = 100;

/** withWorkHealthOptions adds --progress-timeout and the --health-* flags. */
export function withWorkHealthOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--progress-timeout <d>', 'step down if the command sends no heartbeat for this long (systemd WATCHDOG=1 on $NOTIFY_SOCKET, or touching $BATON_HEARTBEAT_FILE); see docs/watchdog.md'))
    .addOption(new Option('--health-cmd <cmd>', 'while leading, run this shell command every --health-interval; --health-failures failures in a row step down'))
    .addOption(new Option('--health-interval <d>', 'how often the health command runs, and how long it may take (default 10s)'))
    .addOption(new Option('--health-failures <n>', 'failures in a row that mean the work is unhealthy (default 3)'));
}

/** resolveWorkHealth checks the flags before anything is opened (64 for a flag without --health-cmd, 78 for a bad value). */
export function resolveWorkHealth(flags: WorkHealthFlags): WorkHealthSettings {
  const duration = (text: string, flag: string) => {
    const ms = parseDuration(text, flag);
    if (ms < PROGRESS_MIN_MS || ms > MAX_DURATION_MS) throw new InvalidConfigError(`${flag}: "${text}" must be between ${PROGRESS_MIN_MS}ms and 24h`);
    return ms;
  };
  const progressTimeoutMs = flags.progressTimeout !== undefined ? duration(flags.progressTimeout, '--progress-timeout') : undefined;
  if (flags.healthCmd === undefined) {
    if (flags.healthInterval !== undefined) throw new UsageError('--health-interval needs --health-cmd');
    if (flags.healthFailures !== undefined) throw new UsageError('--health-failures needs --health-cmd');
    return { progressTimeoutMs };
  }
  if (flags.healthCmd.trim() === '') throw new InvalidConfigError('--health-cmd: the command is empty');
  const intervalMs = flags.healthInterval !== undefined ? duration(flags.healthInterval, '--health-interval') : 10_000;
  const failuresText = flags.healthFailures ?? '3';
  if (!/^[1-9][0-9]{0,3}$/.test(failuresText)) throw new InvalidConfigError(`--health-failures: "${failuresText}" is not a whole number from 1 to 9999`);
  return { progressTimeoutMs, health: { command: flags.healthCmd, intervalMs, failures: Number(failuresText) } };
}

/**
 * hangBaseMs: the first back-off after a hung term — the time the work was given to show it
 * was alive (the progress timeout, or the health check's interval × failures, the longer).
 */
export function hangBaseMs(s: WorkHealthSettings): number {
  return Math.max(s.progressTimeoutMs ?? 0, s.health ? s.health.intervalMs * s.health.failures : 0);
}

/** WorkHealth is the per-process part (directory, socket); `watch` makes each term's part. */
export class WorkHealth {
  private current?: ProgressWatch;

  private constructor(
    readonly settings: WorkHealthSettings,
    private readonly dir: string | undefined,
    private readonly socket: NotifySocket | undefined,
    private readonly clock: Clock,
  ) {}

  /**
   * open makes the directory and the socket when a progress timeout is set. `onNoSocket` is
   * told once if python3 cannot serve the socket (the heartbeat file still works).
   */
  static async open(settings: WorkHealthSettings, onNoSocket: (path: string) => void, clock: Clock = realClock): Promise<WorkHealth> {
    if (settings.progressTimeoutMs === undefined) return new WorkHealth(settings, undefined, undefined, clock);
    const dir = mkdtempSync(join(tmpdir(), 'baton-work-'));
    writeFileSync(join(dir, 'heartbeat'), '');
    let self: WorkHealth | undefined;
    const socket = await NotifySocket.open(join(dir, 'notify'), (m) => self?.current?.notified(m), process.env.BATON_PYTHON || 'python3');
    if (!socket) onNoSocket(join(dir, 'notify'));
    self = new WorkHealth(settings, dir, socket, clock);
    return self;
  }

  /**
   * env is what a term's command gets: nothing more without a progress timeout; with one, the
   * watchdog variables, replacing any systemd gave baton itself (those are baton's to answer).
   */
  env(): Record<string, string | undefined> {
    if (!this.dir) return {};
    return {
      NOTIFY_SOCKET: undefined,
      WATCHDOG_USEC: undefined,
      WATCHDOG_PID: undefined,
      BATON_HEARTBEAT_FILE: join(this.dir, 'heartbeat'),
      ...(this.socket
        ? { NOTIFY_SOCKET: this.socket.path, WATCHDOG_USEC: String(Math.round(this.settings.progressTimeoutMs! * 1000)), BATON_SET_WATCHDOG_PID: '1' }
        : {}),
    };
  }

  /** watch starts watching one term; `onHung` is called once with why. Close the result when the term ends. */
  watch(env: NodeJS.ProcessEnv, onHung: (why: string) => void): ProgressWatch {
    this.current?.close();
    const w = new ProgressWatch({
      clock: this.clock,
      timeoutMs: this.settings.progressTimeoutMs,
      heartbeatFile: this.dir && join(this.dir, 'heartbeat'),
      health: this.settings.health,
      env,
      onHung,
    });
    this.current = w;
    return w;
  }

  /** close stops the socket and removes the directory. */
  close(): void {
    this.current?.close();
    this.socket?.close();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
