/**
 * The records a chaos run writes, one JSON object per line, all stamped with `monoMs()`
 * (chaos/clock.ts) so the three kinds of log merge onto one timeline:
 *
 * - each candidate process writes `<identity>.jsonl` (CandidateEvent);
 * - the register writes `register.jsonl` (RegisterEvent): every accepted write, run-length
 *   encoded, and every rejected one;
 *
 * In shard mode (`--shards N`) a candidate's leadership events carry the `shard` they are about,
 * and register events the register `key` (`s<shard>`) written to: one fenced register per shard.
 * - the harness writes `harness.jsonl` (HarnessEvent): processes started and ended, faults.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';

/** CandidateEvent is one line of a candidate's log. `t` is monoMs() when it was written. */
export type CandidateEvent =
  | { ev: 'start'; t: number; identity: string; pid: number; skewMs: number }
  /**
   * Won the lease: `acquireStart` is when the acquiring write was sent, `deadline` when
   * isLeader() turns false; `wall` is this process's (possibly faked) Date.now(), for people.
   */
  | { ev: 'elected'; t: number; wall: number; term: number; acquireStart: number; deadline: number; shard?: number }
  /** A successful renewal: its round trip and the new deadline. */
  | { ev: 'renewed'; t: number; term: number; rttMs: number; deadline: number; shard?: number }
  | { ev: 'stopped'; t: number; wall: number; term: number; reason: string; shard?: number }
  /** The elector saw a different holder or term in the record (null holder: free). */
  | { ev: 'leader'; t: number; holder: string | null; term: number }
  /** The register refused a write this candidate sent while isLeader() was true. */
  | { ev: 'fenced'; t: number; term: number; newest: number }
  /** Store errors since the last such line (rate-limited). */
  | { ev: 'store-error'; t: number; count: number; message: string }
  /** Wall time minus the shared monotonic time; written at start and whenever it jumps. */
  | { ev: 'wall'; t: number; skewMs: number }
  /** The event loop was blocked on purpose from `t` to `until`. */
  | { ev: 'stall'; t: number; until: number }
  | { ev: 'exit'; t: number };

/** RegisterEvent is one line of the register's log. */
export type RegisterEvent =
  /** `n` consecutive accepted writes with token `token` from `from`, between t0 and t1. */
  | { ev: 'accepted'; token: number; from: string; t0: number; t1: number; n: number; key?: string }
  /** A write refused because `newest` had already been accepted. */
  | { ev: 'rejected'; t: number; token: number; from: string; newest: number; key?: string };

/** FaultKind names a kind of fault the harness injects. */
export type FaultKind = 'kill' | 'pause' | 'store' | 'partition' | 'clock' | 'stall' | 'handover' | 'link' | 'load';

/**
 * FAULT_KINDS lists every fault kind, in the order reports show them. `link` (a slow or lossy
 * link) needs `--net netns`; `link` and `load` are used only when named, so `--faults all` (and
 * every seed drawn from it) is what it was before they existed.
 */
export const FAULT_KINDS: readonly FaultKind[] = ['kill', 'pause', 'store', 'partition', 'clock', 'stall', 'handover', 'link', 'load'];

/** HarnessEvent is one line of the harness's log. */
export type HarnessEvent =
  | { ev: 'spawn'; t: number; slot: number; identity: string; pid: number; wallOffset?: string }
  /** A candidate process ended (killed, or exited at the end of the run). */
  | { ev: 'exit'; t: number; identity: string; signal?: string; code?: number | null }
  /** A fault starts. For clock faults, `jumpMs` is how far the target's wall clock should move. */
  | { ev: 'inject'; t: number; id: number; kind: FaultKind; variant: string; target?: string; holdMs: number; jumpMs?: number }
  /** The fault is over; for store faults, `t` is when the store answers again. */
  | { ev: 'heal'; t: number; id: number; kind: FaultKind; detail?: string }
  /** The measured window: from the first election to the start of the shutdown. `hostSkewMs` is the harness's (unfaked) wall minus monotonic time. */
  | { ev: 'window'; t: number; edge: 'start' | 'end'; hostSkewMs?: number }
  | { ev: 'rtt'; t: number; samplesMs: number[] };

/** JsonlWriter appends one JSON object per line with synchronous writes: a SIGKILL loses nothing written. */
export class JsonlWriter<T> {
  private fd: number | undefined;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'a');
  }

  write(record: T): void {
    if (this.fd !== undefined) writeSync(this.fd, JSON.stringify(record) + '\n');
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** readJsonl parses a JSON-lines file; a torn last line (a process killed mid-write) is skipped. */
export function readJsonl<T>(path: string): T[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const out: T[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      // only a torn final line can fail to parse; the rest of the file is intact
    }
  }
  return out;
}
