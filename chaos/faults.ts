/**
 * Faults: a schedule drawn from the seed, and the injector that applies it to a live run.
 *
 * Faults run one at a time — settle, inject, hold, heal — so every leaderless gap can be
 * charged to one fault. The schedule draws the same number of random values for every fault
 * whatever happens at run time, so a seed always gives the same kinds, variants, timings and
 * target roles (leader or standby); which process is leader at that moment is up to the run.
 * Kinds come in shuffled rounds, so every kind appears once before any appears twice.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { monoMs, sleepMs } from './clock.js';
import type { LinkVariant, NetTopology, PartitionVariant } from '../infra/netns.js';
import type { FaultKind, HarnessEvent, JsonlWriter } from './events.js';
import type { Fleet } from './fleet.js';
import type { PartitionMode, PartitionProxy } from '../infra/proxy.js';
import type { Random } from './random.js';
import type { RegisterClient } from './register-client.js';
import type { ChaosTiming, RunningStore } from './stores.js';
import type { LeaseStore } from '../src/core/store.js';
import { openStore } from '../src/stores/registry.js';
import { handedTo, requestHandover } from '../src/core/handover.js';
import { readCandidate } from '../src/core/candidates.js';

/** FaultPlan is one scheduled fault. Durations are in ms. */
export interface FaultPlan {
  readonly id: number;
  readonly kind: FaultKind;
  /** Quiet time before the fault, counted once a leader is writing again (see FaultInjector.settle). */
  readonly settleMs: number;
  /** How long the fault lasts before it is healed. */
  readonly holdMs: number;
  /** Aim at the leader (else at a standby). */
  readonly atLeader: boolean;
  /** Which standby, as a fraction of the standbys alive. */
  readonly pick: number;
  /** Draw for the kind's variant (store fault kind, partition mode, clock offset). */
  readonly variantDraw: number;
}

/** WALL_OFFSETS are the libfaketime offsets clock faults move a wall clock between. */
export const WALL_OFFSETS = ['+0', '+1h', '-1h', '+10m', '-10m', '+1d', '-2h'] as const;

/** offsetMs converts a WALL_OFFSETS entry to milliseconds. */
export function offsetMs(offset: string): number {
  const m = /^([+-])(\d+)([smhd]?)$/.exec(offset);
  if (!m) throw new Error(`bad wall offset ${offset}`);
  const unit = { '': 1000, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[3]!]!;
  return (m[1] === '-' ? -1 : 1) * Number(m[2]) * unit;
}

/** planFaults yields the seeded fault schedule for the given kinds, without end. */
export function* planFaults(random: Random, kinds: readonly FaultKind[], timing: ChaosTiming, options: { atLeader?: boolean } = {}): Generator<FaultPlan> {
  const lease = timing.leaseDurationMs;
  let round: FaultKind[] = [];
  for (let id = 1; ; id++) {
    if (round.length === 0) round = random.shuffled(kinds);
    const kind = round.shift()!;
    const settleMs = lease * random.between(0.5, 1);
    const holdDraw = random.next();
    // Drawn either way, so that --at-leader changes nothing else in the schedule.
    const atLeader = random.chance(0.8) || options.atLeader === true;
    const pick = random.next();
    const variantDraw = random.next();
    let holdMs: number;
    if (kind === 'kill') holdMs = lease * (0.5 + holdDraw); // restart after
    else if (kind === 'clock') holdMs = Math.max(2500, lease); // libfaketime re-reads its file about once a second
    // A handover's hold is its time limit, not a duration: it ends when answered. On a polling
    // store each of its steps waits for a poll (about a retry period each), so give it room.
    else if (kind === 'handover') holdMs = lease * 8;
    else holdMs = lease * (1.3 + 0.5 * holdDraw); // longer than a lease: someone must take over
    yield { id, kind, settleMs, holdMs, atLeader, pick, variantDraw };
  }
}

/** CandidateLinks are one candidate's network paths; a partition cuts both. */
export interface CandidateLinks {
  store: PartitionProxy;
  register: PartitionProxy;
}

/** FaultContext is what the injector acts on. */
export interface FaultContext {
  fleet: Fleet;
  store: RunningStore;
  /** The store's fault variants this run uses (a subset of store.faultVariants). */
  storeFaults: readonly string[];
  /** Per slot, for network stores: the proxies to the store and to the register. */
  proxies?: CandidateLinks[];
  register: RegisterClient;
  log: JsonlWriter<HarnessEvent>;
  /** Current libfaketime offset per slot, when clock faults are on. */
  wallOffsets?: string[];
  /** The run's lock (handover faults ask for its directed handover). */
  lock: string;
  /** The variants `partition` faults draw from (loopback: blackhole, reset; netns: PARTITION_VARIANTS). */
  partitionVariants: readonly string[];
  /** The variants `link` faults draw from (netns only). */
  linkVariants?: readonly string[];
  /** --net netns: every process on its own host; slot i is host `c<i>`, the store `store`. */
  net?: NetTopology;
}

/** FaultInjector applies planned faults and counts them by kind. */
export class FaultInjector {
  readonly counts: Record<FaultKind, number> = { kill: 0, pause: 0, store: 0, partition: 0, clock: 0, stall: 0, handover: 0, link: 0, load: 0 };
  /** The harness's own handle on the store, for handover faults (opened on first use). */
  private handle?: Promise<LeaseStore>;
  /** The highest priority a `prefer` handover fault has given a candidate. */
  private topPriority = 0;

  constructor(private readonly ctx: FaultContext) {}

  async close(): Promise<void> {
    if (this.handle) await (await this.handle.catch(() => undefined))?.close();
  }

  /**
   * settle waits until some leader is writing to the register (the previous fault's failover is
   * over, so each gap is charged to one fault), then for the plan's quiet time. A leader that
   * never comes is not waited for beyond `giveUpMs`: the checker will report that gap.
   */
  async settle(plan: FaultPlan, giveUpMs: number): Promise<void> {
    const until = monoMs() + giveUpMs;
    for (;;) {
      const last = await this.ctx.register.lastWriter();
      if ((last && last.ageMs < 100) || monoMs() > until) break;
      await sleepMs(20);
    }
    await sleepMs(plan.settleMs);
  }

  /** run injects one fault, holds it, heals it. */
  async run(plan: FaultPlan): Promise<void> {
    const { fleet, store, log } = this.ctx;
    const slot = await this.target(plan);
    const target = slot === undefined ? undefined : fleet.identityOf(slot);
    const inject = (variant: string, jumpMs?: number) =>
      log.write({ ev: 'inject', t: monoMs(), id: plan.id, kind: plan.kind, variant, target, holdMs: plan.holdMs, jumpMs });
    const heal = (detail?: string) => log.write({ ev: 'heal', t: monoMs(), id: plan.id, kind: plan.kind, detail });
    this.counts[plan.kind]++;
    switch (plan.kind) {
      case 'store': {
        const variants = this.ctx.storeFaults;
        const variant = variants[Math.floor(plan.variantDraw * variants.length)]!;
        // Logged once the break has taken hold: taking SQLite's exclusive lock waits for the
        // writers in progress, and renewals served meanwhile are not evidence against the fault.
        await store.breakStore(variant);
        inject(variant);
        await sleepMs(plan.holdMs);
        await store.mendStore(variant);
        return heal('store answers');
      }
      case 'kill':
        inject('SIGKILL');
        await fleet.kill(slot!);
        await sleepMs(plan.holdMs);
        fleet.spawn(slot!);
        return heal(`restarted as ${fleet.identityOf(slot!)}`);
      case 'pause':
        inject('SIGSTOP');
        fleet.pause(slot!);
        await sleepMs(plan.holdMs);
        fleet.resume(slot!);
        return heal('SIGCONT');
      case 'stall':
        inject('busy loop');
        fleet.stall(slot!, plan.holdMs);
        await sleepMs(plan.holdMs);
        return heal();
      case 'partition': {
        const variants = this.ctx.partitionVariants;
        const variant = variants[Math.floor(plan.variantDraw * variants.length)]!;
        const net = this.ctx.net;
        if (net) {
          // Kernel-level: DROP rules in the target host's own namespace (infra/netns.ts). Only
          // `isolate` cuts the register too; its held writes arrive after the heal, to be fenced.
          net.partition(`c${slot}`, variant as PartitionVariant, 'store');
          inject(variant);
          await sleepMs(plan.holdMs);
          const { droppedPackets } = await net.heal(`c${slot}`);
          return heal(`dropped ${droppedPackets}`);
        }
        const mode = variant as PartitionMode;
        const links = this.ctx.proxies?.[slot!];
        if (!links) throw new Error('partition faults need a network store');
        inject(mode);
        links.store.cut(mode);
        // Writes a cut-off leader sent downstream arrive after the heal: fencing must refuse them.
        links.register.cut(mode);
        await sleepMs(plan.holdMs);
        links.store.heal();
        links.register.heal();
        return heal();
      }
      case 'link': {
        const net = this.ctx.net;
        const variants = this.ctx.linkVariants;
        if (!net || !variants) throw new Error('link faults need --net netns');
        const variant = variants[Math.floor(plan.variantDraw * variants.length)]!;
        await net.degrade(`c${slot}`, variant as LinkVariant);
        inject(variant);
        await sleepMs(plan.holdMs);
        const c = await net.heal(`c${slot}`);
        return heal(`dropped ${c.droppedPackets}, delayed ${c.delayedPackets}`);
      }
      case 'load': {
        // A loaded host: one busy process per core beside the candidates (and the store), then
        // the leader is killed, so the failover is timed under load (RELIABILITY finding 9).
        const hogs = Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }));
        await sleepMs(300);
        inject('kill under load');
        await fleet.kill(slot!);
        await sleepMs(plan.holdMs);
        fleet.spawn(slot!);
        const cpuMs = hogs.reduce((sum, h) => sum + cpuMsOf(h.pid), 0);
        for (const h of hogs) h.kill('SIGKILL');
        return heal(`restarted as ${fleet.identityOf(slot!)}; ${hogs.length} hogs, cpu ${Math.round(cpuMs)} ms`);
      }
      case 'handover': {
        this.handle ??= openStore(this.ctx.store.url);
        const store = await this.handle;
        if (plan.variantDraw >= 0.5) {
          // A preference change: the standby is replaced (a graceful stop, as a deploy does) by an
          // incarnation of a priority above every other; the leader's preference rule hands over
          // to it once it has been present a retry period. Effect: it leads (handed), next.
          const priority = ++this.topPriority;
          await fleet.replace(slot!, priority);
          const to = fleet.identityOf(slot!);
          log.write({ ev: 'inject', t: monoMs(), id: plan.id, kind: plan.kind, variant: `prefer ${to} (priority ${priority})`, target: to, holdMs: plan.holdMs });
          const until = monoMs() + plan.holdMs;
          let seen: string | null | undefined;
          while (monoMs() < until) {
            const record = await store.read(this.ctx.lock).catch(() => undefined);
            seen = record === undefined ? seen : (record?.holder ?? null);
            if (record && record.holder === to && handedTo(record) === undefined) return heal(`handed by the preference rule (term ${record.term})`);
            await sleepMs(50);
          }
          return heal(`not handed within the hold: the record names ${seen ?? 'nobody'}`);
        }
        // A directed handover to a standby, asked through the store as `baton handover` would:
        // the leader drains first, the named standby alone takes over. Effect: it leads (handed).
        inject(`to ${target}`);
        const until = monoMs() + plan.holdMs;
        // A standby restarted by the fault before registers as it starts: wait for its entry.
        while (monoMs() < until && (store.ledger || store.presence) && !(await readCandidate(store, this.ctx.lock, target!).catch(() => null))) await sleepMs(50);
        // A handover that finds the lease moving already (the failover of the fault before it,
        // on a loaded machine) answers `moved` or `not-held`: that is not the handover failing, so
        // it is asked again, up to three times within the hold, once a leader is writing again.
        let r = '';
        for (let attempt = 1; attempt <= 3; attempt++) {
          r = await requestHandover(store, this.ctx.lock, target!, { timeoutMs: Math.max(until - monoMs(), 500) }).then(
            (x) => x.outcome + ('why' in x ? `: ${x.why}` : ''),
            (err: Error) => `failed: ${err.message}`,
          );
          if (!(r.startsWith('moved') || r.startsWith('not-held')) || monoMs() >= until) break;
          while (monoMs() < until) {
            const last = await this.ctx.register.lastWriter();
            if (last && last.ageMs < 100 && last.from !== target) break;
            await sleepMs(20);
          }
          r = `${r} (attempt ${attempt})`;
        }
        return heal(r);
      }
      case 'clock': {
        const offsets = this.ctx.wallOffsets;
        if (!offsets) throw new Error('clock faults need the fleet started under libfaketime');
        const from = offsets[slot!]!;
        let i = Math.floor(plan.variantDraw * WALL_OFFSETS.length);
        if (WALL_OFFSETS[i] === from) i = (i + 1) % WALL_OFFSETS.length;
        const to = WALL_OFFSETS[i]!;
        offsets[slot!] = to;
        inject(`${from} → ${to}`, offsetMs(to) - offsetMs(from));
        fleet.setWallOffset(slot!, to);
        await sleepMs(plan.holdMs);
        return heal();
      }
    }
  }

  /** target picks the slot to break: the register's latest writer, or a standby. */
  private async target(plan: FaultPlan): Promise<number | undefined> {
    if (plan.kind === 'store') return undefined;
    const { fleet, register } = this.ctx;
    const last = await register.lastWriter();
    const leader = last && last.ageMs < 250 ? fleet.slotOf(last.from) : undefined;
    // A handover's target is always a standby (the leader hands over *to* it).
    if (plan.atLeader && leader !== undefined && plan.kind !== 'handover') return leader;
    const others: number[] = [];
    for (let i = 0; i < fleet.size; i++) if (i !== leader && fleet.alive(i)) others.push(i);
    if (others.length === 0) return leader ?? 0;
    return others[Math.floor(plan.pick * others.length)]!;
  }
}

/** cpuMsOf is the CPU time (user + system) a live process has used, from /proc; 0 if gone. */
function cpuMsOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat (11 and 12 after the command name), in ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}
