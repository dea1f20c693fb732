/**
 * ProgressWatch: decides, for one leadership term, whether the command baton runs is still
 * making progress (issue 28). Heartbeats come from three places:
 *
 * 1. the notify socket (notify-socket.ts): a datagram with WATCHDOG=1, as systemd programs send
 *    it; WATCHDOG=trigger means "hung now"; WATCHDOG_USEC=N changes the timeout, as systemd
 *    allows; READY=1, STATUS=…, STOPPING=1 and the rest are accepted and change nothing;
 * 2. the heartbeat file (BATON_HEARTBEAT_FILE): a new modification time is a heartbeat, so
 *    `touch "$BATON_HEARTBEAT_FILE"` is enough for a script;
 * 3. the health command (`--health-cmd`): run every interval; `failures` failures in a row
 *    (a non-zero exit, or still running after one interval) mean the work is unhealthy.
 *
 * No heartbeat within the timeout, counted from the term's start, or a failing health command
 * → `onHung(why)`, once. What to do then (stop the command first, release, back off) is the
 * caller's (commands/run.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { formatDuration } from '../core/duration.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import type { NotifyMessage } from './notify-socket.js';

/** HealthCheck is `--health-cmd CMD --health-interval D --health-failures N`. */
export interface HealthCheck {
  readonly command: string;
  readonly intervalMs: number;
  readonly failures: number;
}

/** ProgressWatchOptions: what to watch for one term. */
export interface ProgressWatchOptions {
  readonly clock: Clock;
  /** No heartbeat for this long means hung (--progress-timeout); undefined: heartbeats not required. */
  readonly timeoutMs?: number;
  /** BATON_HEARTBEAT_FILE, polled for a new modification time. */
  readonly heartbeatFile?: string;
  readonly health?: HealthCheck;
  /** The environment the health command runs with (the term's, like the command's). */
  readonly env?: NodeJS.ProcessEnv;
  /** Called once, with one line saying why, when the work is hung or unhealthy. */
  readonly onHung: (why: string) => void;
}

/** ProgressWatch watches one term's command; `close` when the term ends. */
export class ProgressWatch {
  private timeoutMs?: number;
  private lastBeatMs: number;
  private lastMtimeMs?: number;
  private timer?: TimerHandle;
  private healthTimer?: TimerHandle;
  private probe?: ChildProcess;
  private failed = 0;
  private done = false;

  constructor(private readonly o: ProgressWatchOptions) {
    this.timeoutMs = o.timeoutMs;
    this.lastBeatMs = o.clock.monotonicMs();
    this.lastMtimeMs = this.mtime();
    if (this.timeoutMs !== undefined) this.tick();
    if (o.health) this.healthTimer = o.clock.setTimer(() => this.runProbe(), o.health.intervalMs);
  }

  /** notified takes one message from the notify socket. */
  notified(m: NotifyMessage): void {
    if (this.done) return;
    const usec = m.get('WATCHDOG_USEC');
    if (usec !== undefined && /^[1-9][0-9]{0,15}$/.test(usec)) this.timeoutMs = Number(usec) / 1000;
    const wd = m.get('WATCHDOG');
    if (wd === 'trigger') return this.hung('the command reported itself hung (WATCHDOG=trigger)');
    if (wd === '1') this.beat();
  }

  /** beat records a heartbeat now. */
  beat(): void {
    this.lastBeatMs = this.o.clock.monotonicMs();
  }

  /** close stops watching (the term ended) and ends a probe still running. */
  close(): void {
    this.done = true;
    if (this.timer) this.o.clock.clearTimer(this.timer);
    if (this.healthTimer) this.o.clock.clearTimer(this.healthTimer);
    this.killProbe();
  }

  /** tick polls the heartbeat file and checks the timeout, often enough for a tenth of it. */
  private tick(): void {
    if (this.done || this.timeoutMs === undefined) return;
    const mtime = this.mtime();
    if (mtime !== undefined && mtime !== this.lastMtimeMs) {
      this.lastMtimeMs = mtime;
      this.beat();
    }
    const silentMs = this.o.clock.monotonicMs() - this.lastBeatMs;
    if (silentMs >= this.timeoutMs) return this.hung(`no heartbeat within the progress timeout (${formatDuration(this.timeoutMs)})`);
    const pollMs = Math.min(500, Math.max(20, this.timeoutMs / 10));
    this.timer = this.o.clock.setTimer(() => this.tick(), Math.min(pollMs, this.timeoutMs - silentMs));
  }

  private mtime(): number | undefined {
    if (!this.o.heartbeatFile) return undefined;
    try {
      return statSync(this.o.heartbeatFile).mtimeMs;
    } catch {
      return undefined;
    }
  }

  /** runProbe runs the health command once; a failure or a probe still running after one interval counts. */
  private runProbe(): void {
    const h = this.o.health!;
    if (this.done) return;
    const probe = spawn('/bin/sh', ['-c', h.command], { stdio: ['ignore', 'ignore', 'inherit'], env: this.o.env, detached: true });
    this.probe = probe;
    let settled = false;
    const result = (ok: boolean, what: string) => {
      if (settled) return;
      settled = true;
      if (this.probe === probe) this.probe = undefined;
      if (this.done) return;
      this.failed = ok ? 0 : this.failed + 1;
      if (this.failed >= h.failures) return this.hung(`the health command failed ${this.failed} time${this.failed === 1 ? '' : 's'} in a row (${what})`);
      this.healthTimer = this.o.clock.setTimer(() => this.runProbe(), h.intervalMs);
    };
    const limit = this.o.clock.setTimer(() => {
      this.killProbe();
      result(false, `still running after ${formatDuration(h.intervalMs)}`);
    }, h.intervalMs);
    probe.on('error', (err) => {
      this.o.clock.clearTimer(limit);
      result(false, err.message);
    });
    probe.on('exit', (code, signal) => {
      this.o.clock.clearTimer(limit);
      result(code === 0, code !== null ? `exit ${code}` : `signal ${signal}`);
    });
  }

  private killProbe(): void {
    const p = this.probe;
    this.probe = undefined;
    if (!p?.pid || p.exitCode !== null || p.signalCode !== null) return;
    try {
      process.kill(-p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  private hung(why: string): void {
    if (this.done) return;
    this.close();
    this.o.onHung(why);
  }
}
