/**
 * Membership and the shared assignment of a shard group, both kept in the store's ledger under
 * `baton/shards/<group>/`:
 *
 *   members/<identity>   each member's heartbeat, rewritten every retry period (`left` on a clean stop),
 *                        with the shards it excludes: {"v":1,"beat":n,"excluded":{"<shard>":<ms left>}}
 *   assignment           {"v":1,"shards":N,"members":[…],"owners":[…]} — the current assignment
 *
 * A member is live while its heartbeat keeps changing: an entry this process has seen unchanged
 * for a whole lease duration, timed on its own monotonic clock, belongs to a member that is
 * gone — the elector's observation rule, so no clocks are compared across hosts. The time counts
 * only while this member was observing: after a gap in its own listings (a store outage, a pause)
 * every member's clock starts again.
 *
 * The assignment changes by compare-and-set only, computed with nextAssignment from the one it
 * replaces, by whichever member first sees the membership differ from the record. Two rules
 * keep members whose views lag from undoing each other's change: a member is removed only by one
 * that has seen it dead, and added only by one that has seen its heartbeat change after it first
 * read the current assignment (a member that really lives keeps beating; a dead one never does).
 *
 * Members that join are added once this member has seen the same set of them for a settle time
 * (a retry period: two looks in a row), or, if that set keeps changing, a lease duration after
 * it first saw one. Members started together first see each other's heartbeats at different
 * times; adding each as it appeared rewrote the assignment once per member, and every version
 * started and stopped hundreds of electors (the first member briefly owned every shard). Removals
 * never wait: a member is found dead only after a lease of silence already.
 *
 * Exclusions (issue 28): a member whose work on a shard hung excludes that shard for a back-off
 * and says so in each heartbeat, with the time left counted on its own clock and written anew
 * each beat — never a deadline another host would have to compare with its clock. The
 * assignment keeps each live member away from the shards it excludes (assignment.ts); any
 * member that sees the record break that writes the next one, as for a membership change.
 */
import type { Clock } from '../core/clock.js';
import { InvalidConfigError } from '../core/errors.js';
import { Sightings, sight, unchangedForMs, type Sighting } from '../core/observation.js';
import type { Ledger } from '../core/store.js';
import { nextAssignment, ownerNames, type ShardAssignment, type ShardExclusions } from './assignment.js';

/** groupPrefix is where a group's ledger entries live. */
export function groupPrefix(group: string): string {
  return `baton/shards/${group}/`;
}

/** MAX_MEMBERS bounds one listing of a group's members. */
export const MAX_MEMBERS = 10_000;

/** MemberView is what one observation of the group's heartbeats says. */
export interface MemberView {
  /** Identities whose heartbeat is live, sorted. */
  readonly live: readonly string[];
  /** Every member entry, with whether it counts as live. */
  readonly all: readonly { identity: string; live: boolean; left: boolean }[];
  /** The shards each live member excludes, with the time left as it last published it (ms). */
  readonly exclusions: ShardExclusions;
}

/** parseExcluded reads a heartbeat's `excluded` ({"<shard>": ms left}); malformed entries are skipped. */
export function parseExcluded(value: unknown): Map<number, number> {
  const out = new Map<number, number>();
  if (!value || typeof value !== 'object') return out;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (/^(0|[1-9][0-9]{0,5})$/.test(k) && typeof v === 'number' && Number.isFinite(v) && v > 0) out.set(Number(k), v);
  }
  return out;
}

/** StoredAssignment is the assignment record as read, with when this process first saw that version. */
export interface StoredAssignment extends ShardAssignment {
  readonly shards: number;
  readonly version: string;
  readonly seenSinceMs: number;
}

/** parseAssignment reads an assignment record's value; null if it is not one. */
export function parseAssignment(value: string): { shards: number; members: string[]; owners: number[] } | null {
  try {
    const v = JSON.parse(value) as { shards?: unknown; members?: unknown; owners?: unknown };
    if (!Number.isInteger(v.shards) || !Array.isArray(v.members) || !Array.isArray(v.owners)) return null;
    return { shards: v.shards as number, members: v.members.map(String), owners: v.owners.map(Number) };
  } catch {
    return null;
  }
}

/** Membership keeps this member's heartbeat, observes the others', and moves the assignment on. */
export class Membership {
  private readonly prefix: string;
  private readonly key: string;
  private version: string | null | undefined;
  private beat = 0;
  /** Each member's heartbeat version, seen unchanged since when (the observation rule: core/observation.ts). */
  private readonly seen = new Sightings();
  private assignmentSeen?: Sighting;
  /** When this member last listed the heartbeats (monotonic ms). */
  private lastObservedMs?: number;
  /** The members waiting to be added (sorted, as text), since when exactly they were seen, and since when any were. */
  private joining?: { key: string; sinceMs: number; firstMs: number };
  /** The record version and exclusions last checked against each other (see advance). */
  private checked?: { key: string; excluding: boolean };

  constructor(
    private readonly ledger: Ledger,
    private readonly group: string,
    private readonly shards: number,
    private readonly identity: string,
    private readonly leaseDurationMs: number,
    private readonly clock: Clock,
    /** How long the same joiners must have been seen before they are added (see the file comment). */
    private readonly settleMs = 0,
    /** The shards this member excludes now, with the time left (ms), published with each heartbeat. */
    private readonly excluded: () => ReadonlyMap<number, number> = () => new Map(),
  ) {
    this.prefix = groupPrefix(group);
    this.key = `${this.prefix}members/${identity}`;
  }

  /** heartbeat rewrites this member's entry (taking over one an earlier process of this identity left). */
  async heartbeat(left = false): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      if (this.version === undefined) this.version = (await this.ledger.get(this.key))?.version ?? null;
      const excluded = left ? new Map<number, number>() : this.excluded();
      const value = JSON.stringify({
        v: 1,
        beat: ++this.beat,
        ...(left ? { left: true } : {}),
        ...(excluded.size > 0 ? { excluded: Object.fromEntries([...excluded].map(([s, ms]) => [String(s), Math.max(1, Math.ceil(ms))])) } : {}),
      });
      const result = await this.ledger.put(this.key, this.version, value);
      if (result.ok) {
        this.version = result.entry.version;
        return;
      }
      // Someone wrote since our last version: an earlier process with this identity. Ours now.
      this.version = result.current === undefined ? undefined : (result.current?.version ?? null);
    }
  }

  /** observe lists the heartbeats and applies the liveness rule. */
  async observe(): Promise<MemberView> {
    const prefix = `${this.prefix}members/`;
    const entries = await this.ledger.list(prefix, MAX_MEMBERS);
    const now = this.clock.monotonicMs();
    // A heartbeat counts as unchanged only for as long as this member was looking. After a
    // stretch of more than half a lease without a listing (the store was down for this member,
    // or this process was paused), start every clock again: otherwise, right after a store
    // outage longer than a lease, each member would find every other one dead before they had
    // had a chance to beat again, and the group would be torn down and rebuilt.
    if (this.lastObservedMs !== undefined && now - this.lastObservedMs > this.leaseDurationMs / 2) this.seen.restartAll(now);
    this.lastObservedMs = now;
    const all: { identity: string; live: boolean; left: boolean }[] = [];
    const exclusions = new Map<string, Map<number, number>>();
    const present = new Set<string>();
    for (const e of entries) {
      const identity = e.key.slice(prefix.length);
      present.add(identity);
      let left = false;
      let excluded = new Map<number, number>();
      try {
        const beat = JSON.parse(e.value) as { left?: unknown; excluded?: unknown };
        left = beat.left === true;
        excluded = parseExcluded(beat.excluded);
      } catch {
        left = true; // not a heartbeat of ours
      }
      const seen = this.seen.see(identity, e.version, now);
      const live = identity === this.identity || (!left && unchangedForMs(seen, now) < this.leaseDurationMs);
      all.push({ identity, live, left: left && identity !== this.identity });
      if (live && excluded.size > 0) exclusions.set(identity, excluded);
    }
    this.seen.keepOnly(present);
    const live = all.filter((m) => m.live).map((m) => m.identity);
    if (!live.includes(this.identity)) live.push(this.identity);
    return { live: live.sort(), all, exclusions };
  }

  /** readAssignment reads the record; null when the group has none yet. Refuses another shard count. */
  async readAssignment(): Promise<StoredAssignment | null> {
    const entry = await this.ledger.get(`${this.prefix}assignment`);
    if (!entry) return null;
    const parsed = parseAssignment(entry.value);
    if (!parsed) throw new InvalidConfigError(`shards: the assignment record of group "${this.group}" is not one baton wrote`);
    if (parsed.shards !== this.shards) {
      throw new InvalidConfigError(`shards: group "${this.group}" has ${parsed.shards} shards in the store, not ${this.shards} (a new count needs a new group name)`);
    }
    this.assignmentSeen = sight(this.assignmentSeen, entry.version, this.clock.monotonicMs());
    return { ...parsed, version: entry.version, seenSinceMs: this.assignmentSeen.sinceMs };
  }

  /**
   * advance writes the next assignment if this member's view of the membership differs from the
   * record's (see the file comment for who may add and remove whom). Returns the assignment in
   * force afterwards: the new one, or the record as it was if nothing changed or the write lost.
   */
  async advance(current: StoredAssignment | null, view: MemberView): Promise<ShardAssignment> {
    const live = new Set(view.live);
    const status = new Map(view.all.map((m) => [m.identity, m] as const));
    const next = new Set<string>();
    for (const m of current?.members ?? []) {
      const s = status.get(m);
      // Keep unless seen dead or gone; a member not listed at all has no heartbeat left.
      if (m === this.identity || (s !== undefined && s.live)) next.add(m);
    }
    const joining: string[] = [];
    for (const m of live) {
      if (next.has(m)) continue;
      const beatAfterRecord = current === null || (this.seen.get(m)?.sinceMs ?? -Infinity) > current.seenSinceMs;
      if (m === this.identity || beatAfterRecord) joining.push(m);
    }
    if (this.joinsSettled(joining)) for (const m of joining) next.add(m);
    const same = current !== null && next.size === current.members.length && current.members.every((m) => next.has(m));
    const exclusions = new Map([...view.exclusions].filter(([m]) => next.has(m)));
    if (same && !this.breaksExclusions(current, next, exclusions)) return current;
    // No group yet, and its first members still settling: nothing to write.
    if (current === null && next.size === 0) return { members: [], owners: new Array<number>(this.shards).fill(-1) };
    const proposal = nextAssignment(this.group, this.shards, current, [...next], exclusions);
    if (same && ownerNames(proposal).every((m, s) => m === ownerNames(current)[s])) return current;
    const value = JSON.stringify({ v: 1, shards: this.shards, members: proposal.members, owners: proposal.owners });
    const result = await this.ledger.put(`${this.prefix}assignment`, current?.version ?? null, value);
    if (result.ok) {
      this.assignmentSeen = { version: result.entry.version, sinceMs: this.clock.monotonicMs() };
      return proposal;
    }
    // Another member moved it first: use what it wrote; the next period reconsiders.
    return (await this.readAssignment()) ?? proposal;
  }

  /**
   * breaksExclusions tells whether the record, whose members are `next`, must be computed again
   * for the exclusions: checked once per record version and set of excluded shards (the times
   * left only order a shard that everyone excludes, which is placed already), and once more when
   * the last exclusion ends (a record placed around exclusions may then be rebalanced).
   */
  private breaksExclusions(current: StoredAssignment, next: ReadonlySet<string>, exclusions: ShardExclusions): boolean {
    const excluding = [...exclusions.values()].some((x) => x.size > 0);
    if (!excluding && !this.checked?.excluding) return false;
    const key = `${current.version}|${[...next].sort().join(',')}|${[...exclusions].map(([m, x]) => `${m}:${[...x.keys()].sort((a, b) => a - b).join(',')}`).sort().join(';')}`;
    if (this.checked?.key === key) return false;
    this.checked = { key, excluding };
    return true;
  }

  /** joinsSettled tells whether `joining` (sorted) may be added now: seen unchanged for the settle time, or waiting a lease. */
  private joinsSettled(joining: readonly string[]): boolean {
    const now = this.clock.monotonicMs();
    if (joining.length === 0) {
      this.joining = undefined;
      return true;
    }
    const key = joining.join('\n');
    if (this.joining?.key !== key) this.joining = { key, sinceMs: now, firstMs: this.joining?.firstMs ?? now };
    return now - this.joining.sinceMs >= this.settleMs || now - this.joining.firstMs >= this.leaseDurationMs;
  }
}
