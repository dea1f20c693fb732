/**
 * The leader-tag reconciler (seed 000, fixed). It makes the tags match one rule — exactly one
 * InService, Healthy member of the group carries the leader tag, or none if there is no such
 * member — from the state it reads, not from the event that woke it. So it needs no previous
 * leader to exist: a group that scaled to zero and back gets a leader again (seed 004's bug),
 * and running it on a schedule repairs anything a lost notification left behind.
 *
 * Void tags. A tag on an instance that is not InService (or Pending) in the group — terminated,
 * detached, Terminating*, Standby — cannot make that instance act as leader (`asg-tag` counts a
 * tag only while the instance's target lifecycle state is InService), so it never blocks a new
 * leader. Such stale tags are cleaned up after the new leader is tagged, best effort: EC2 may
 * refuse to touch a terminated instance (IncorrectInstanceState) until it disappears, about an
 * hour later, or the IAM policy may not reach it. A failed clean-up is a warning, not a failure.
 *
 * Why it is safe to run twice at once, or to die half-way:
 *
 * 1. Deterministic choice. Keep the lowest-id candidate that already carries the tag; else take
 *    the lowest-id candidate. Two runs that read the same state choose the same instance, so
 *    their writes agree; a run that sees an extra tagged candidate keeps the same one as any
 *    other run that sees it.
 * 2. Remove, then add. A round either removes the tag from live members that must not have it,
 *    or adds it to the chosen one, or cleans up void tags — one kind of write per round. An add
 *    happens only in a round whose fresh read showed no other live member tagged. A single run
 *    therefore never makes two live members tagged; a failure between steps leaves zero live
 *    tagged (a gap until the next run), never two.
 * 3. Verify before returning. A run returns only after a round that read the state and found
 *    nothing to change (void tags it already failed to clean up excepted). Every write is
 *    followed by its writer's own verifying read, so the last verifying read in time comes
 *    after the last write by anyone: when every run has returned successfully, the final state
 *    is one the last of them checked — one tagged live member (or none when there is no
 *    candidate). Two concurrent runs whose reads straddle a membership change can briefly tag
 *    two members (each added after its own clean read); the later verification removes one
 *    before that run returns.
 *
 * Limits: EC2 tag reads are eventually consistent, so "briefly" can outlast a run's verification
 * by a few seconds in rare cases; the scheduled sweep repairs it. Tags are a hint with no fencing
 * token. In Lambda, reserved concurrency 1 removes concurrent runs altogether (examples/aws).
 */
import type { AwsApi, GroupInstance, TagRow } from './api.js';
import { compareIds, electionCandidates, tagCounts } from './candidates.js';
import { BatonError, errorMessage } from '../core/errors.js';

/** ReconcileOptions: the tag key and how many rounds to try. */
export interface ReconcileOptions {
  /** Leader tag key (see leaderTagKey). */
  tag: string;
  /** Rounds before giving up; default 8 (a clean change takes 3: remove, add, verify). */
  maxRounds?: number;
  /** Called with one line per write, for logs. */
  log?: (line: string) => void;
}

/** ReconcileResult is the group's state when the run ended. */
export interface ReconcileResult {
  readonly group: string;
  /** The tagged member, or null when the group has no candidate. */
  readonly leader: string | null;
  /** Whether the group exists. */
  readonly exists: boolean;
  readonly candidates: number;
  /** Instances the tag was removed from, and the one it was added to (if any). */
  readonly removed: string[];
  readonly added: string | null;
  /** Void tags (see above) that could not be removed this run; they do not count. */
  readonly stale: string[];
  /** One line per failed clean-up of a void tag. */
  readonly warnings: string[];
  readonly rounds: number;
}

/** ReconcileError: the tags did not settle within maxRounds (exit 75; run again). */
export class ReconcileError extends BatonError {}

/** Plan is what one round found necessary. */
export interface Plan {
  readonly leader: string | null;
  /** Live members (InService or Pending) whose tag must go before anyone is tagged. */
  readonly remove: string[];
  /** Void tags (on instances not InService or Pending in the group): clean up, best effort. */
  readonly stale: string[];
  /**
   * The instance to tag, when no other member carries the tag any more — also when it carries
   * it with a value other than the group's name (set by hand, propagated, or left by another
   * group it was detached from, whose reconciler would otherwise take it away).
   */
  readonly add: string | null;
}

/**
 * planRound decides, from one read of members and tags, what must change. `tagged` are the
 * instances carrying the tag that belong to this group: members, or non-members whose tag value
 * names the group (terminated or detached instances keep their tags).
 */
export function planRound(members: readonly GroupInstance[], tagged: readonly string[], mislabeled: ReadonlySet<string> = new Set()): Plan {
  const candidates = electionCandidates(members);
  const byId = new Map(members.map((m) => [m.instanceId, m]));
  const taggedSet = new Set(tagged);
  const leader = candidates.find((id) => taggedSet.has(id)) ?? candidates[0] ?? null;
  const others = [...taggedSet].filter((id) => id !== leader).sort(compareIds);
  const remove = others.filter((id) => tagCounts(byId.get(id)));
  const stale = others.filter((id) => !tagCounts(byId.get(id)));
  // Step 2: an add waits for a round in which no other live member is tagged; void tags never block it.
  const needsTag = leader !== null && (!taggedSet.has(leader) || mislabeled.has(leader));
  return { leader, remove, stale, add: needsTag && remove.length === 0 ? leader : null };
}

/** reconcileGroup runs rounds until a fresh read needs no change. */
export async function reconcileGroup(api: AwsApi, group: string, options: ReconcileOptions): Promise<ReconcileResult> {
  const maxRounds = options.maxRounds ?? 8;
  const removed = new Set<string>();
  const leftOver = new Set<string>();
  const warnings: string[] = [];
  let added: string | null = null;
  for (let round = 1; round <= maxRounds; round++) {
    // Two reads are not one snapshot; that is fine, because whatever they disagree on is read
    // again by the verifying round, which must find nothing to change.
    const members = await api.groupInstances(group);
    const rows = await api.tagsWithKey(options.tag);
    const tagged = ownTagged(group, members ?? [], rows);
    const mislabeled = new Set(rows.filter((r) => r.value !== group).map((r) => r.instanceId));
    const plan = planRound(members ?? [], tagged, mislabeled);
    const cleanUp = plan.stale.filter((id) => !leftOver.has(id));
    if (plan.remove.length === 0 && plan.add === null && cleanUp.length === 0) {
      return {
        group,
        leader: plan.leader,
        exists: members !== null,
        candidates: electionCandidates(members ?? []).length,
        removed: [...removed].sort(compareIds),
        added,
        stale: plan.stale,
        warnings,
        rounds: round,
      };
    }
    if (plan.remove.length > 0) {
      options.log?.(`${group}: removing ${options.tag} from ${plan.remove.length} instance(s): ${preview(plan.remove)}`);
      await api.removeTag(plan.remove, options.tag);
      for (const id of plan.remove) removed.add(id);
    } else if (plan.add !== null) {
      options.log?.(`${group}: tagging ${plan.add} as leader`);
      await api.addTag([plan.add], options.tag, group);
      added = plan.add;
    } else {
      options.log?.(`${group}: removing stale ${options.tag} from ${cleanUp.length} instance(s) not in service: ${preview(cleanUp)}`);
      for (const failure of await removeBestEffort(api, cleanUp, options.tag)) {
        leftOver.add(failure.id);
        const line = `${group}: warning: stale ${options.tag} left on ${failure.id} (not InService, so it does not count): ${failure.error}`;
        warnings.push(line);
        options.log?.(line);
      }
      for (const id of cleanUp) if (!leftOver.has(id)) removed.add(id);
    }
  }
  throw new ReconcileError(`aws: ${group}: leader tag did not settle after ${maxRounds} rounds (concurrent changes?); run again`);
}

/**
 * removeBestEffort removes the tag from `ids` and returns the ones it could not: one request
 * for all first (EC2 refuses a whole request when one instance is terminated), then one
 * request per instance so a single refusal does not keep the others' stale tags.
 */
async function removeBestEffort(api: AwsApi, ids: string[], tag: string): Promise<{ id: string; error: string }[]> {
  try {
    await api.removeTag(ids, tag);
    return [];
  } catch (err) {
    if (ids.length === 1) return [{ id: ids[0]!, error: errorMessage(err) }];
  }
  const failed: { id: string; error: string }[] = [];
  for (const id of ids) {
    try {
      await api.removeTag([id], tag);
    } catch (err) {
      failed.push({ id, error: errorMessage(err) });
    }
  }
  return failed;
}

/** ownTagged picks the tag rows that belong to `group`: its members', or valued with its name. */
export function ownTagged(group: string, members: readonly GroupInstance[], rows: readonly TagRow[]): string[] {
  const ids = new Set(members.map((m) => m.instanceId));
  return [...new Set(rows.filter((r) => ids.has(r.instanceId) || r.value === group).map((r) => r.instanceId))].sort(compareIds);
}

function preview(ids: string[]): string {
  return ids.length <= 5 ? ids.join(', ') : `${ids.slice(0, 5).join(', ')} and ${ids.length - 5} more`;
}
