/**
 * Fleet runs the candidate processes of a chaos run: spawns them, kills, freezes, stalls and
 * restarts them, and moves their wall clocks.
 *
 * Each slot keeps its number for the whole run; every (re)start is a new incarnation with a
 * new identity `c<slot>.<n>` and its own log file, as a restarted real process would have.
 * With clock faults on, every candidate runs under libfaketime reading its offset from a
 * per-slot file, so its wall clock can be jumped while it runs; the monotonic clock is left
 * alone (FAKETIME_DONT_FAKE_MONOTONIC=1), as baton's safety argument assumes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monoMs } from './clock.js';
import type { HarnessEvent, JsonlWriter } from './events.js';
import type { CandidateConfig } from './candidate.js';
import type { ChaosTiming } from './stores.js';

/** LIBFAKETIME is the preload library of Debian's `faketime` package. */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

const CANDIDATE = fileURLToPath(new URL('./candidate.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** FleetOptions configures the candidates of one run. */
export interface FleetOptions {
  count: number;
  dir: string;
  lock: string;
  /** registerPortFor gives slot i's way to the register (through its proxy for network stores). */
  registerPortFor(slot: number): number;
  timing: ChaosTiming;
  writeEveryMs: number;
  /** Shard mode: each candidate runs a ShardGroup member of group `lock` with this many shards. */
  shards?: number;
  /** Candidates register in the candidate registry (for handover faults). */
  register?: boolean;
  /** With `register`: every candidate runs the preference rule 'priority' (handover faults' `prefer` variant raises one's priority). */
  prefer?: boolean;
  /** storeUrlFor gives slot i's store URL (through its proxy for network stores). */
  storeUrlFor(slot: number): string;
  /** The register's address (default 127.0.0.1). */
  registerHost?: string;
  /** wrap runs slot i's command elsewhere (--net netns: `ip netns exec` on the slot's host). */
  wrap?(slot: number, bin: string, args: string[]): { bin: string; args: string[] };
  /** Wall-clock offsets (libfaketime syntax, e.g. "+1h") per slot; undefined runs without libfaketime. */
  wallOffsets?: string[];
  log: JsonlWriter<HarnessEvent>;
}

interface Slot {
  child?: ChildProcess;
  identity: string;
  incarnation: number;
  /** The priority this slot's incarnations register with (set by replace()). */
  priority?: number;
  paused: boolean;
  exited?: Promise<void>;
}

/** Fleet owns the candidate processes. */
export class Fleet {
  private readonly slots: Slot[] = [];
  /** Set once the fleet is being torn down: nothing is (re)started after that. */
  private closed = false;

  constructor(private readonly options: FleetOptions) {
    if (options.wallOffsets && !existsSync(LIBFAKETIME)) {
      throw new Error(`${LIBFAKETIME} is missing: run \`apt-get install -y faketime\` (needed for clock faults)`);
    }
    for (let i = 0; i < options.count; i++) this.slots.push({ identity: '', incarnation: 0, paused: false });
  }

  get size(): number {
    return this.slots.length;
  }

  /** startAll spawns every candidate. */
  startAll(): void {
    for (let i = 0; i < this.slots.length; i++) this.spawn(i);
  }

  /** identity of the process now in `slot`. */
  identityOf(slot: number): string {
    return this.slots[slot]!.identity;
  }

  /** slotOf finds the slot whose current process has `identity`. */
  slotOf(identity: string): number | undefined {
    const i = this.slots.findIndex((s) => s.identity === identity && this.alive(this.slots.indexOf(s)));
    return i >= 0 ? i : undefined;
  }

  alive(slot: number): boolean {
    const c = this.slots[slot]?.child;
    return !!c && c.exitCode === null && c.signalCode === null;
  }

  /** spawn starts a new incarnation in `slot`. */
  spawn(slot: number): void {
    if (this.closed) return;
    const s = this.slots[slot]!;
    s.incarnation++;
    s.identity = `c${slot}.${s.incarnation}`;
    const o = this.options;
    const config: CandidateConfig = {
      storeUrl: o.storeUrlFor(slot),
      lock: o.lock,
      identity: s.identity,
      registerPort: o.registerPortFor(slot),
      ...(o.registerHost ? { registerHost: o.registerHost } : {}),
      logPath: join(o.dir, `${s.identity}.jsonl`),
      ...o.timing,
      writeEveryMs: o.writeEveryMs,
      shards: o.shards,
      register: o.register,
      ...(s.priority !== undefined ? { priority: s.priority } : {}),
      ...(o.register && o.prefer ? { prefer: 'priority' as const } : {}),
    };
    const env: NodeJS.ProcessEnv = { ...process.env, CHAOS_CANDIDATE: JSON.stringify(config) };
    const offset = o.wallOffsets?.[slot];
    if (offset !== undefined) {
      const file = this.offsetFile(slot);
      if (!existsSync(file)) writeFileSync(file, `${offset}\n`);
      Object.assign(env, {
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME_TIMESTAMP_FILE: file,
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
        // Re-read the offset file at most once a second: jumps land within about two seconds.
        FAKETIME_CACHE_DURATION: '1',
      });
      delete env.FAKETIME;
    }
    const command = { bin: process.execPath, args: ['--import', 'tsx', CANDIDATE] };
    const { bin, args } = o.wrap ? o.wrap(slot, command.bin, command.args) : command;
    const child = spawn(bin, args, {
      cwd: ROOT,
      env,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
    child.stdin!.on('error', () => {}); // a dead child's stdin is not our failure
    const identity = s.identity;
    s.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        o.log.write({ ev: 'exit', t: monoMs(), identity, code, signal: signal ?? undefined });
        if (code !== 0 && signal === null && stderr) process.stderr.write(`candidate ${identity} failed:\n${stderr}\n`);
        resolve();
      }),
    );
    s.child = child;
    s.paused = false;
    o.log.write({ ev: 'spawn', t: monoMs(), slot, identity, pid: child.pid ?? -1, wallOffset: offset });
  }

  /**
   * replace stops the process in `slot` gracefully (as a deploy stops an instance: it releases or
   * withdraws), then starts a new incarnation that registers with `priority` (as do later ones).
   */
  async replace(slot: number, priority: number, graceMs = 5000): Promise<void> {
    const s = this.slots[slot]!;
    if (this.alive(slot)) {
      if (s.paused) this.resume(slot);
      s.child!.stdin!.write('stop\n');
      const timer = setTimeout(() => s.child?.kill('SIGKILL'), graceMs);
      await s.exited;
      clearTimeout(timer);
    }
    s.priority = priority;
    this.spawn(slot);
  }

  /** kill SIGKILLs the process in `slot` and waits until it is gone. */
  async kill(slot: number): Promise<void> {
    const s = this.slots[slot]!;
    if (!this.alive(slot)) return;
    s.child!.kill('SIGKILL');
    await s.exited;
  }

  /** pause freezes the process (SIGSTOP). */
  pause(slot: number): void {
    const s = this.slots[slot]!;
    if (!this.alive(slot)) return;
    s.child!.kill('SIGSTOP');
    s.paused = true;
  }

  /** resume thaws it (SIGCONT). */
  resume(slot: number): void {
    const s = this.slots[slot]!;
    if (!this.alive(slot)) return;
    s.child!.kill('SIGCONT');
    s.paused = false;
  }

  /** stall asks the candidate to block its own event loop for `ms`. */
  stall(slot: number, ms: number): void {
    if (this.alive(slot)) this.slots[slot]!.child!.stdin!.write(`stall ${Math.round(ms)}\n`);
  }

  /** setWallOffset moves the slot's wall clock (libfaketime offset syntax, e.g. "-1h"). */
  setWallOffset(slot: number, offset: string): void {
    writeFileSync(this.offsetFile(slot), `${offset}\n`);
  }

  /** stopAll asks every candidate to stop (releasing its lease), then kills stragglers. */
  async stopAll(graceMs = 5000): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.slots.map(async (s, i) => {
        if (!this.alive(i)) return;
        if (s.paused) this.resume(i);
        s.child!.stdin!.write('stop\n');
        const timer = setTimeout(() => s.child?.kill('SIGKILL'), graceMs);
        await s.exited;
        clearTimeout(timer);
      }),
    );
  }

  /** killAll is the emergency exit: SIGKILL everything now. */
  killAll(): void {
    this.closed = true;
    for (const s of this.slots) {
      try {
        s.child?.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  private offsetFile(slot: number): string {
    return join(this.options.dir, `c${slot}.faketime`);
  }
}
