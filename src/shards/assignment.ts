/**
 * The shard assignment: which live member should own each shard. It is a pure function of the
 * previous assignment and the new set of live members, so any member can compute the next one
 * and every member that computes it gets the same answer:
 *
 *   1. Every member gets a quota: ⌊N / M⌋, and one more for N mod M of them — those that already
 *      own the most (fewest moves), ties broken by a hash of the member's name.
 *   2. A shard stays with its owner if the owner is live and within its quota. An owner over its
 *      quota keeps the shards it scores highest (rendezvous score of shard and member).
 *   3. The remaining shards — those of members that left and the excess of members over quota —
 *      go one by one, best score first, to members still under quota.
 *
 * So a member leaving moves exactly its own shards; a member joining takes exactly its quota,
 * each from a member that was over the new quota; nothing else moves. Loads always differ by at
 * most one. Scores are pseudo-random per (group, shard, member), which spreads the moves.
 *
 * Exclusions (a member whose work on a shard hung, issue 28: it must not be handed that shard
 * straight back) bend rules 2 and 3 and nothing else — with none, the result is the same:
 *
 *   2'. An owner never keeps a shard it excludes; nor does that shard count towards the owner's
 *       holding when the extra quotas of rule 1 are handed out.
 *   3'. A member never receives a shard it excludes in rule 3. A shard left over (every member
 *       still under quota excludes it) goes to the best-scoring member that does not exclude it,
 *       which hands one of its own shards, one the receiver does not exclude, to a member under
 *       quota in exchange (two moves, loads still within one). If no such exchange exists, the
 *       shard goes over quota: to its previous owner if that one may have it, else the
 *       best-scoring member that does not exclude it.
 *   3''. A shard that every member excludes goes to the member whose exclusion ends first (the
 *       shortest remaining time, ties by score): the one that may take it soonest. It waits
 *       there, unowned, until that exclusion ends — the back-off is what keeps a shard whose
 *       work hangs everywhere from bouncing around the group.
 *
 * Recomputing an assignment with the same members and exclusions gives it back unchanged, so a
 * member writes a new record only when something changed.
 */

/**
 * ShardExclusions: per member, the shards it must not be given and how long each exclusion
 * still lasts (ms, as that member last published it, counted on its own clock). Only the order
 * of the remaining times matters (rule 3''), never a comparison with another host's clock.
 */
export type ShardExclusions = ReadonlyMap<string, ReadonlyMap<number, number>>;

/** ShardAssignment is one assignment: `owners[s]` indexes `members` (−1: nobody, with no members). */
export interface ShardAssignment {
  readonly members: readonly string[];
  readonly owners: readonly number[];
}

/**
 * nextAssignment computes the assignment for `live` from `previous` (null for the first), keeping
 * every member away from the shards it excludes (see the file comment; exclusions of members not
 * in `live` are ignored).
 */
export function nextAssignment(group: string, shards: number, previous: ShardAssignment | null, live: readonly string[], exclusions?: ShardExclusions): ShardAssignment {
  let next = assignOnce(group, shards, previous, live, exclusions);
  if (!exclusions || ![...exclusions.values()].some((x) => x.size > 0)) return next;
  // With exclusions, quotas are handed out before anyone knows who may take what, so a shard
  // placed over quota (rule 3') can be placed better by a second look. Look again until nothing
  // changes (a handful of times at most), so that the result is stable when recomputed.
  for (let round = 0; round < MAX_EXCLUSION_ROUNDS; round++) {
    const again = assignOnce(group, shards, next, live, exclusions);
    if (again.owners.every((o, s) => o === next.owners[s])) return next;
    next = again;
  }
  return next;
}

/** MAX_EXCLUSION_ROUNDS bounds the second looks of nextAssignment with exclusions. */
const MAX_EXCLUSION_ROUNDS = 8;

/** assignOnce is one application of rules 1–3 (see the file comment). */
function assignOnce(group: string, shards: number, previous: ShardAssignment | null, live: readonly string[], exclusions?: ShardExclusions): ShardAssignment {
  const members = [...new Set(live)].sort();
  const owners = new Array<number>(shards).fill(-1);
  if (members.length === 0) return { members, owners };
  const index = new Map(members.map((m, i) => [m, i] as const));
  const seeds = members.map((m) => hash32(`${group}\u0000${m}`));
  // score(s, m) = mix32(mix32(s + φ) ^ seed(m)); the shard half is computed once per shard.
  const shardMix = new Uint32Array(shards);
  for (let s = 0; s < shards; s++) shardMix[s] = mix32(s + 0x9e3779b9);
  const score = (s: number, m: number) => mix32(shardMix[s]! ^ seeds[m]!);
  // excludedMs(s, m): how long member m still excludes shard s; undefined if it does not.
  const byMember = members.map((m) => exclusions?.get(m));
  const anyExcluded = byMember.some((x) => x !== undefined && x.size > 0);
  const excludedMs = (s: number, m: number): number | undefined => byMember[m]?.get(s);
  // Carry over owners that are still live (2'. never a shard the owner excludes).
  const held: number[][] = members.map(() => []);
  const previousIndex = previous ? previous.members.map((name) => index.get(name)) : [];
  const previousOwner = (s: number): number | undefined => {
    const p = previous?.owners[s];
    return p === undefined || p < 0 ? undefined : previousIndex[p];
  };
  // Members that had to let a shard go this way come last for the extra quotas (so a member
  // with one more than the others loses that one, not a healthy shard in an exchange).
  const letGo = members.map(() => 0);
  for (let s = 0; s < shards; s++) {
    const m = previousOwner(s);
    if (m === undefined) continue;
    if (excludedMs(s, m) === undefined) held[m]!.push(s);
    else letGo[m] = 1;
  }
  // 1. Quotas.
  const base = Math.floor(shards / members.length);
  let extra = shards % members.length;
  const quota = members.map(() => base);
  const byHolding = members.map((_, m) => m).sort((a, b) => held[b]!.length - held[a]!.length || letGo[a]! - letGo[b]! || seeds[a]! - seeds[b]! || a - b);
  for (const m of byHolding) if (extra-- > 0) quota[m]!++;
  // 2. Keep what fits, best score first (only an owner over its quota needs its shards ranked).
  const load = members.map(() => 0);
  for (let m = 0; m < members.length; m++) {
    let keep = held[m]!;
    if (keep.length > quota[m]!) keep = keep.sort((a, b) => score(b, m) - score(a, m) || a - b).slice(0, quota[m]);
    for (const s of keep) owners[s] = m;
    load[m] = keep.length;
  }
  // 3. Place the rest: every (free shard, member under quota) pair, best score first — the
  //    highest-scoring pair whose shard is still free and whose member is still under quota
  //    wins, ties to the lower shard, then the lower member.
  const free: number[] = [];
  for (let s = 0; s < shards; s++) if (owners[s] === -1) free.push(s);
  if (free.length > 0) placeBestFirst(free, members.length, quota, load, owners, score, anyExcluded ? (s, m) => excludedMs(s, m) === undefined : undefined);
  if (anyExcluded) placeLeftovers(members.length, quota, load, owners, score, excludedMs, previousOwner);
  return { members, owners };
}

/**
 * placeLeftovers places the shards rule 3 could not (every member under quota excludes them),
 * lowest shard first: rules 3' and 3'' of the file comment.
 */
function placeLeftovers(
  memberCount: number,
  quota: readonly number[],
  load: number[],
  owners: number[],
  score: (s: number, m: number) => number,
  excludedMs: (s: number, m: number) => number | undefined,
  previousOwner: (s: number) => number | undefined,
): void {
  const all = Array.from({ length: memberCount }, (_, m) => m);
  const better = (s: number) => (a: number, b: number) => score(s, b) - score(s, a) || a - b;
  for (let s = 0; s < owners.length; s++) {
    if (owners[s] !== -1) continue;
    const eligible = all.filter((m) => excludedMs(s, m) === undefined).sort(better(s));
    if (eligible.length === 0) {
      // 3''. Excluded everywhere: to the member whose exclusion ends first.
      const m = [...all].sort((a, b) => excludedMs(s, a)! - excludedMs(s, b)! || better(s)(a, b))[0]!;
      owners[s] = m;
      load[m]!++;
      continue;
    }
    // 3'. An exchange: eligible x takes s and gives one of its shards t to a member under quota.
    const open = all.filter((m) => load[m]! < quota[m]!);
    let exchanged = false;
    for (const x of eligible) {
      let best: { t: number; m: number } | undefined;
      for (let t = 0; t < owners.length; t++) {
        if (owners[t] !== x) continue;
        for (const m of open) {
          if (excludedMs(t, m) !== undefined) continue;
          if (!best || score(t, m) > score(best.t, best.m)) best = { t, m };
        }
      }
      if (!best) continue;
      owners[best.t] = best.m;
      load[best.m]!++;
      owners[s] = x;
      exchanged = true;
      break;
    }
    if (exchanged) continue;
    // No exchange: over quota, to the previous owner if it may have it (so a recomputation
    // keeps it there), else the best-scoring member that does not exclude it.
    const prev = previousOwner(s);
    const m = prev !== undefined && excludedMs(s, prev) === undefined ? prev : eligible[0]!;
    owners[s] = m;
    load[m]!++;
  }
}

/**
 * placeBestFirst gives the free shards to the members under quota in the order of one list of
 * every (shard, member) pair sorted best score first — without building that list: each open
 * member's free shards are ranked once (a numeric sort of packed keys), and each step takes the
 * best head among the members, skipping shards already placed. Same result, O(F·log F) per open
 * member instead of a sort of F × M pair objects.
 */
function placeBestFirst(
  free: readonly number[],
  memberCount: number,
  quota: readonly number[],
  load: number[],
  owners: number[],
  score: (s: number, m: number) => number,
  allowed?: (s: number, m: number) => boolean,
): void {
  const open = Array.from({ length: memberCount }, (_, m) => m).filter((m) => load[m]! < quota[m]!);
  // Key = score · 2^20 + (2^20 − 1 − shard): ascending order is score, then higher shard first,
  // so read from the end it is best score first, ties to the lower shard. Exact below 2^53.
  const SPAN = 2 ** 20;
  if (free.length >= SPAN) throw new RangeError(`shards: at most ${SPAN - 1} shards can be placed`);
  const ranked = open.map((m) => {
    // A member's excluded shards are left out of its ranking (rule 3').
    const mine = allowed ? free.filter((s) => allowed(s, m)) : free;
    const keys = new Float64Array(mine.length);
    for (let i = 0; i < mine.length; i++) keys[i] = score(mine[i]!, m) * SPAN + (SPAN - 1 - mine[i]!);
    return keys.sort();
  });
  const next = open.map((_, i) => ranked[i]!.length - 1);
  for (;;) {
    let best = -1;
    let bestKey = -1;
    let bestShard = -1;
    for (let i = 0; i < open.length; i++) {
      const m = open[i]!;
      if (load[m]! >= quota[m]!) continue;
      // Skip this member's heads whose shard has been placed already.
      while (next[i]! >= 0 && owners[SPAN - 1 - (ranked[i]![next[i]!]! % SPAN)] !== -1) next[i]!--;
      if (next[i]! < 0) continue;
      const key = ranked[i]![next[i]!]!;
      const keyScore = Math.floor(key / SPAN);
      const shard = SPAN - 1 - (key % SPAN);
      const bestScore = Math.floor(bestKey / SPAN);
      // Best score first, then the lower shard, then the lower member (open is in member order).
      if (best < 0 || keyScore > bestScore || (keyScore === bestScore && shard < bestShard)) {
        best = i;
        bestKey = key;
        bestShard = shard;
      }
    }
    if (best < 0) return;
    owners[bestShard] = open[best]!;
    load[open[best]!]!++;
    next[best]!--;
  }
}

/** assignShards is the assignment from scratch, as owner names per shard. */
export function assignShards(group: string, shards: number, members: readonly string[]): string[] {
  return ownerNames(nextAssignment(group, shards, null, members));
}

/** ownerNames turns an assignment into the owner's name for each shard. */
export function ownerNames(a: ShardAssignment): string[] {
  return a.owners.map((m) => a.members[m] ?? '');
}

/**
 * heirShards returns the shards, owned by other members, that `member` would receive if their
 * owner alone left: for each other member, the next assignment without it, exactly as the
 * survivors will compute it. A member watches these shards too, so by the time it finds their
 * owner gone it has already seen their leases run out.
 */
export function heirShards(group: string, shards: number, a: ShardAssignment, member: string): number[] {
  const out: number[] = [];
  if (!a.members.includes(member)) return out;
  for (let x = 0; x < a.members.length; x++) {
    if (a.members[x] === member || !a.owners.includes(x)) continue;
    const without = nextAssignment(group, shards, a, a.members.filter((_, i) => i !== x));
    const me = without.members.indexOf(member);
    for (let s = 0; s < a.owners.length; s++) if (a.owners[s] === x && without.owners[s] === me) out.push(s);
  }
  return out.sort((p, q) => p - q);
}

/** hash32 is FNV-1a over the string's UTF-16 code units, then mixed. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}

/** mix32 is MurmurHash3's finaliser: every input bit affects every output bit. */
export function mix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** movedShards counts the shards whose owner differs between two lists of owner names. */
export function movedShards(before: readonly string[], after: readonly string[]): number {
  let n = 0;
  for (let s = 0; s < Math.max(before.length, after.length); s++) if (before[s] !== after[s]) n++;
  return n;
}
