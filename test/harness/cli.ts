/**
 * Helpers for tests that run the real `baton` CLI as separate processes: spawn it with a clean
 * environment, collect its output, wait for conditions, and clean up everything started.
 *
 * The CLI runs from `dist/` (bin/baton.js), so these tests need the tsc build (scripts/test.mjs
 * does it unless BATON_SKIP_BUILD is set).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** ROOT is the repository root; BATON_BIN the CLI entry point. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BATON_BIN = join(ROOT, 'bin', 'baton.js');

/** CliResult is how one finished CLI run ended. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * cleanEnv is process.env without any BATON_* variable (so the machine's settings never leak
 * into a test), with HOME and XDG_STATE_HOME pointing at `home` so the default store is private.
 */
export function cleanEnv(home: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('BATON_')) env[k] = v;
  return { ...env, HOME: home, XDG_STATE_HOME: join(home, 'state'), ...extra };
}

/** TempDir is a private directory removed by `remove()`. */
export class TempDir {
  readonly path = mkdtempSync(join(tmpdir(), 'baton-cli-'));
  join(...parts: string[]): string {
    return join(this.path, ...parts);
  }
  /** sqlite store URL of a database file in this directory. */
  sqlite(name = 'baton.db'): string {
    return `sqlite:${this.join(name)}`;
  }
  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}

/** BatonProcess is one running CLI process whose output is collected as it arrives. */
export class BatonProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<CliResult>;
  private finished?: CliResult;

  constructor(args: string[], options: { env: NodeJS.ProcessEnv; cwd?: string }) {
    this.child = spawn(process.execPath, [BATON_BIN, ...args], { env: options.env, cwd: options.cwd ?? ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (b: Buffer) => (this.stdout += b.toString()));
    this.child.stderr!.on('data', (b: Buffer) => (this.stderr += b.toString()));
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        this.finished = { code, signal, stdout: this.stdout, stderr: this.stderr };
        resolve(this.finished);
      });
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  get done(): boolean {
    return this.finished !== undefined;
  }

  /** signal sends a signal to baton itself (not to its command). */
  signal(sig: NodeJS.Signals): void {
    if (!this.done) {
      try {
        process.kill(this.pid, sig);
      } catch {
        // already gone
      }
    }
  }

  /** waitForExit resolves with the result, or rejects (naming the output) after `ms`. */
  async waitForExit(ms = 10_000): Promise<CliResult> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`baton pid ${this.pid} did not exit within ${ms}ms; stderr:\n${this.stderr}`)), ms);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** kill ends the process (resuming it first if stopped) and waits for it. Safe to call twice. */
  async kill(): Promise<void> {
    if (this.done) return;
    this.signal('SIGCONT');
    this.signal('SIGKILL');
    await this.exited;
  }
}

/** runCli runs baton to completion and returns its exit code and output. */
export async function runCli(args: string[], options: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number }): Promise<CliResult> {
  const p = new BatonProcess(args, options);
  try {
    return await p.waitForExit(options.timeoutMs ?? 15_000);
  } finally {
    await p.kill();
  }
}

/** waitFor polls `check` every `everyMs` until it returns a value other than undefined/false, or throws after `ms`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms = 10_000, everyMs = 10): Promise<T> {
  const until = performance.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (performance.now() > until) throw new Error(`timed out after ${ms}ms waiting for ${what}`);
    await delay(everyMs);
  }
}

/** delay resolves after `ms`. */
export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** pidAlive tells whether a process exists (a zombie counts as gone once reaped). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // A zombie still answers kill(0); its state letter is Z.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** monoNs reads CLOCK_MONOTONIC, which every process on the host shares. */
export function monoNs(): bigint {
  return process.hrtime.bigint();
}

/**
 * CHILD_SCRIPT is the command the process tests run under `baton run`: it appends
 * `start TERM PID MONO_NS WALL_MS IDENTITY` to $CHILD_LOG, then runs until killed; on SIGTERM it
 * appends the matching `stop` line and exits with $CHILD_STOP_CODE (default 0). With
 * $CHILD_EXIT set it exits with that code at once instead (after the start line); with
 * $CHILD_RUNS=N it exits 0 at once until the log holds N start lines.
 */
export const CHILD_SCRIPT = `
const fs = require('node:fs');
const e = process.env;
const line = (kind) => fs.appendFileSync(e.CHILD_LOG, [kind, e.BATON_TERM, process.pid, process.hrtime.bigint(), Date.now(), e.BATON_IDENTITY].join(' ') + '\\n');
// The handler goes in before the start line: a test that signals on seeing that line must not
// find the child still without it (killed by the signal instead of exiting with its code).
process.on('SIGTERM', () => { line('stop'); process.exit(Number(e.CHILD_STOP_CODE || 0)); });
line('start');
if (e.CHILD_EXIT !== undefined) process.exit(Number(e.CHILD_EXIT));
if (e.CHILD_RUNS && fs.readFileSync(e.CHILD_LOG, 'utf8').split('start ').length - 1 < Number(e.CHILD_RUNS)) process.exit(0);
setInterval(() => {}, 1 << 30);
`;

/** childCommand is the argv after `--` that runs CHILD_SCRIPT. */
export function childCommand(): string[] {
  return [process.execPath, '-e', CHILD_SCRIPT];
}

/** LogLine is one parsed line of a CHILD_SCRIPT log. */
export interface LogLine {
  kind: 'start' | 'stop';
  term: number;
  pid: number;
  monoNs: bigint;
  wallMs: number;
  identity: string;
}

/** readChildLog parses the shared child log (missing file = no lines). */
export function readChildLog(path: string): LogLine[] {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const [kind, term, pid, mono, wall, identity] = l.split(' ');
      if ((kind !== 'start' && kind !== 'stop') || !identity) throw new Error(`malformed child log line: ${l}`);
      return { kind, term: Number(term), pid: Number(pid), monoNs: BigInt(mono!), wallMs: Number(wall), identity };
    });
}

/** lines returns the non-empty lines of a text (e.g. stderr). */
export function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}

// Like the harness's CHILD_SCRIPT, but its SIGTERM handler takes STOP_DELAY_MS to finish.
export const SLOW_CHILD = `
const fs = require('node:fs');
const e = process.env;
const line = (kind) => fs.appendFileSync(e.CHILD_LOG, [kind, e.BATON_TERM, process.pid, process.hrtime.bigint(), Date.now(), e.BATON_IDENTITY].join(' ') + '\\n');
process.on('SIGTERM', () => setTimeout(() => { line('stop'); process.exit(0); }, Number(e.STOP_DELAY_MS)));
line('start');
setInterval(() => {}, 1 << 30);
`;
