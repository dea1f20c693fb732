/**
 * Child processes of the bench: started with tsx (or as compiled JS), read as JSON lines, always killed at exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** ChildEvent is one JSON line a child printed, with `ev` naming it. */
export type ChildEvent = { ev: string; t: number; [key: string]: unknown };

/** BenchChild is a running child process and the events it printed so far. */
export class BenchChild {
  readonly events: ChildEvent[] = [];
  readonly exited: Promise<number | null>;
  private readonly listeners = new Set<(e: ChildEvent) => void>();
  stderr = '';

  constructor(readonly proc: ChildProcess) {
    live.add(proc);
    this.exited = new Promise((resolve) => proc.once('exit', (code) => {
      live.delete(proc);
      resolve(code);
    }));
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      let e: ChildEvent;
      try {
        e = JSON.parse(line) as ChildEvent;
      } catch {
        return;
      }
      this.events.push(e);
      for (const l of [...this.listeners]) l(e);
    });
    proc.stderr!.on('data', (b: Buffer) => {
      this.stderr = (this.stderr + b.toString()).slice(-4000);
    });
  }

  get pid(): number {
    return this.proc.pid!;
  }

  /** send writes one command line to the child's stdin. */
  send(line: string): void {
    if (this.proc.stdin?.writable) this.proc.stdin.write(`${line}\n`);
  }

  /** next resolves with the first event from now on matching `match`. */
  next(match: (e: ChildEvent) => boolean, timeoutMs = 60_000, what = 'an event'): Promise<ChildEvent> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`bench: child ${this.pid} printed no ${what} within ${timeoutMs}ms${this.stderr ? `: ${this.stderr.trim().split('\n').pop()}` : ''}`));
      }, timeoutMs);
      const listener = (e: ChildEvent) => {
        if (!match(e)) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(e);
      };
      this.listeners.add(listener);
      void this.exited.then((code) => {
        if (!this.listeners.has(listener)) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        reject(new Error(`bench: child ${this.pid} exited (${code}) before ${what}${this.stderr ? `: ${this.stderr.trim().split('\n').pop()}` : ''}`));
      });
    });
  }

  /** seen resolves with the first event matching `match`, already printed or still to come. */
  seen(match: (e: ChildEvent) => boolean, timeoutMs = 60_000, what = 'an event'): Promise<ChildEvent> {
    const past = this.events.find(match);
    return past ? Promise.resolve(past) : this.next(match, timeoutMs, what);
  }

  /** on calls `listener` for every later event; returns a function that stops it. */
  on(listener: (e: ChildEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** kill sends a signal and resolves once the process is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(signal);
    await this.exited;
  }

  /** stop asks the child to stop cleanly, then kills it if it has not exited within `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.send('stop');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * spawnBench starts `node --import tsx bench/<script>` with `env` added — or, given `js` (a
 * compiled entry, see compiled-child.ts), `node <js>` with no loader. `nodeArgs` go before the
 * script (e.g. `--cpu-prof`).
 */
export function spawnBench(script: string, env: Record<string, string>, options: { js?: string; nodeArgs?: readonly string[] } = {}): BenchChild {
  const args = options.js ? [...(options.nodeArgs ?? []), options.js] : [...(options.nodeArgs ?? []), '--import', 'tsx', join(ROOT, 'bench', script)];
  const proc = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new BenchChild(proc);
}
