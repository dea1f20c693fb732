/**
 * One leadership term as telemetry sees it: when it started and ended (wall clock, for the
 * span), why it ended, and what happened meanwhile (failed renewals, a step-down). Fed only by
 * the elector's events; both the OpenTelemetry API adapter (api.ts) and the CLI's own OTLP
 * exporter (otlp-exporter.ts) turn these records into spans.
 */
import type { LeaderElector } from '../core/elector.js';
import type { ElectedEvent, LeaderEvent, StopReason, StoppedEvent } from '../core/elector-events.js';
import { realClock, type Clock, type TimerHandle } from '../core/clock.js';
import { errorMessage } from '../core/errors.js';

/** Attribute names, after client-go's vocabulary (lock, identity) and OpenTelemetry's `exception.message`. */
export const ATTR = {
  lock: 'baton.lock',
  term: 'baton.term',
  identity: 'baton.identity',
  store: 'baton.store',
  stopReason: 'baton.stop_reason',
  previousHolder: 'baton.previous_holder',
  takeoverKind: 'baton.takeover.kind',
  takeoverGapMs: 'baton.takeover.gap_ms',
  note: 'baton.step_down.note',
  exceptionMessage: 'exception.message',
} as const;

/** SPAN_NAME is the name of the span of one leadership term. */
export const SPAN_NAME = 'baton.leadership';
/** EVENT names: a renewal that failed while leading, and the step-down that ends a term. */
export const EVENT = { renewFailed: 'baton.renew_failed', stepDown: 'baton.step_down' } as const;

/** TermEvent is something that happened during a term. */
export interface TermEvent {
  readonly name: string;
  readonly wallMs: number;
  readonly attributes: Readonly<Record<string, string | number>>;
}

/**
 * Takeover is how a term began, as this candidate saw it: `first` (nobody held the lock that it
 * saw), `handover` (the previous holder released it), `failover` (its lease ran out). `gapMs` is
 * the new term's acquiredAt minus the release time (handover) or the previous holder's last
 * renewal this candidate saw (failover): wall clocks of two hosts, like the dashboard's timeline,
 * so it is for people and alerts, not for any decision.
 */
export interface Takeover {
  readonly kind: 'first' | 'handover' | 'failover';
  readonly previousHolder?: string;
  readonly gapMs?: number;
}

/** TermRecord is one term: open while `endWallMs` is undefined. */
export interface TermRecord {
  readonly lock: string;
  readonly term: number;
  readonly identity: string;
  readonly store?: string;
  readonly startWallMs: number;
  readonly takeover: Takeover;
  endWallMs?: number;
  reason?: StopReason;
  note?: string;
  readonly events: TermEvent[];
}

/** TermSink receives a term when it starts, each event, and when it ends. */
export interface TermSink {
  started?(t: TermRecord): void;
  event?(t: TermRecord, e: TermEvent): void;
  ended(t: TermRecord): void;
}

/** LOST_REASONS: a term that ended with one of these was taken away, not given up. */
export const LOST_REASONS: readonly StopReason[] = ['lost', 'renew-deadline'];

/**
 * trackTerms follows `elector` and reports each of its terms to `sink`. Returns a function that
 * detaches (ending an open term with reason `stopped` is the elector's job, not this one's).
 */
export function trackTerms(elector: LeaderElector, sink: TermSink, options: { store?: string; clock?: Clock } = {}): () => void {
  const clock = options.clock ?? realClock;
  let open: TermRecord | undefined;
  // The other holder as last seen: renewals reach a standby's memory without an event, so it is
  // sampled (from memory, never the store) every retry period, as the dashboard's timeline does.
  let seen: { holder: string | null; previous?: string; renewedAt?: number } | undefined;
  const sample = (l = elector.leader()) => {
    if (!l || l.isSelf) return;
    if (l.holder !== null) seen = { holder: l.holder, renewedAt: l.record?.renewedAt };
    else if (seen?.holder) seen = { holder: null, previous: seen.holder, renewedAt: l.record?.renewedAt };
  };
  const onLeader = (l: LeaderEvent) => sample(l);
  const everyMs = Math.min(1000, elector.timing.retryPeriodMs);
  let timer: TimerHandle;
  const arm = () => {
    timer = clock.setTimer(() => (sample(), arm()), everyMs);
    (timer as { unref?: () => void }).unref?.(); // never what keeps a process alive
  };
  arm();
  const onElected = (e: ElectedEvent) => {
    const acquiredAt = elector.leader()?.record?.acquiredAt;
    const gap = (from?: number) => (acquiredAt !== undefined && from !== undefined ? acquiredAt - from : undefined);
    const takeover: Takeover = !seen
      ? { kind: 'first' }
      : seen.holder === null
        ? { kind: 'handover', previousHolder: seen.previous, gapMs: gap(seen.renewedAt) }
        : { kind: 'failover', previousHolder: seen.holder, gapMs: gap(seen.renewedAt) };
    seen = undefined;
    open = { lock: elector.lock, term: e.term, identity: elector.identity, store: options.store, startWallMs: clock.wallMs(), takeover, events: [] };
    sink.started?.(open);
  };
  const add = (name: string, attributes: Record<string, string | number>) => {
    if (!open) return;
    const e: TermEvent = { name, wallMs: clock.wallMs(), attributes };
    open.events.push(e);
    sink.event?.(open, e);
  };
  const onStoreError = (err: Error) => add(EVENT.renewFailed, { [ATTR.exceptionMessage]: errorMessage(err) });
  const onStopped = (e: StoppedEvent) => {
    if (!open || open.term !== e.term) return;
    add(EVENT.stepDown, { [ATTR.stopReason]: e.reason, ...(e.note ? { [ATTR.note]: e.note } : {}) });
    const t = open;
    open = undefined;
    t.endWallMs = clock.wallMs();
    t.reason = e.reason;
    if (e.note) t.note = e.note;
    sink.ended(t);
  };
  sample();
  elector.on('leader', onLeader);
  elector.on('elected', onElected);
  elector.on('storeError', onStoreError);
  elector.on('stopped', onStopped);
  return () => {
    clock.clearTimer(timer);
    elector.off('leader', onLeader);
    elector.off('elected', onElected);
    elector.off('storeError', onStoreError);
    elector.off('stopped', onStopped);
  };
}

/** takeoverAttributes are a term's span attributes for how it began. */
export function takeoverAttributes(t: TermRecord): Record<string, string | number> {
  return {
    [ATTR.takeoverKind]: t.takeover.kind,
    ...(t.takeover.previousHolder ? { [ATTR.previousHolder]: t.takeover.previousHolder } : {}),
    ...(t.takeover.gapMs !== undefined ? { [ATTR.takeoverGapMs]: t.takeover.gapMs } : {}),
  };
}
