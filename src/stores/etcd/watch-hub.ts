import type { IDuplexStream, IEvent, IWatchRequest, IWatchResponse } from 'etcd3';
import type { Rpc } from './client.js';
import { endQuietly } from './keepalive.js';

type Stream = IDuplexStream<IWatchRequest, IWatchResponse>;

/** MAX_UNCONFIRMED bounds the create requests sent but not yet confirmed by the server. */
const MAX_UNCONFIRMED = 256;

/** WatchSpec is one etcd watch: a key (or range) from a revision on, optionally only deletions. */
export interface WatchSpec {
  readonly key: Buffer;
  readonly rangeEnd?: Buffer;
  /** First revision to report: the revision of the read this watch follows, plus one. */
  readonly startRevision: string;
  readonly onlyDeletes?: boolean;
  readonly onlyPuts?: boolean;
  /** Events, in revision order. Must not throw. */
  onEvents(events: readonly IEvent[]): void;
  /**
   * The watch ended without being cancelled (stream broken, server restarted, history
   * compacted): events may have been missed, so the owner must read again and re-watch.
   */
  onLost(): void;
}

/**
 * WatchHub multiplexes every watch of one store handle over a single etcd Watch stream, with
 * watch IDs chosen here (etcd ≥ 3.4) so answers are matched without relying on their order.
 *
 * It replaces etcd3's own watch manager, which throws from inside stream callbacks when an
 * answer arrives for a watcher it has just forgotten: here nothing is thrown; unknown answers
 * are ignored, and a broken stream ends every watch with `onLost` (their owners re-read and
 * re-watch, so no change is missed). The stream is opened on first use and after a failure.
 *
 * At most MAX_UNCONFIRMED create requests are outstanding at a time; the others wait here, in
 * order, and each one's confirmation deadline starts when it is sent. A handle holding
 * thousands of locks has a watch per lock: sent all at once, the last confirmations would come
 * after the deadline of the first, and the stream would be given up for being slow — again and
 * again, each time followed by every lock watch reading and re-watching.
 */
export class WatchHub {
  private stream?: Stream;
  private opening?: Promise<void>;
  /** Create requests not yet confirmed, with the timer that gives up on the stream. */
  private readonly unconfirmed = new Map<number, NodeJS.Timeout>();
  private readonly watches = new Map<number, WatchSpec>();
  /** Watches whose create request waits for a slot, in order (a Set keeps insertion order). */
  private readonly queued = new Set<number>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly rpc: Rpc) {}

  /** watch starts one watch; returns a function that cancels it. */
  watch(spec: WatchSpec): () => void {
    if (this.closed) {
      queueMicrotask(() => spec.onLost());
      return () => {};
    }
    const id = this.nextId++;
    this.watches.set(id, spec);
    this.queued.add(id);
    if (this.stream) this.pump(this.stream);
    else if (!this.opening) this.opening = this.open();
    return () => {
      // A create still queued was never sent: there is nothing to cancel on the server.
      if (this.watches.delete(id) && !this.queued.delete(id) && this.stream) this.send({ cancel_request: { watch_id: id } });
    };
  }

  /** close ends the stream; watches end without `onLost`. */
  close(): void {
    this.closed = true;
    this.watches.clear();
    this.queued.clear();
    for (const id of [...this.unconfirmed.keys()]) this.confirm(id);
    const s = this.stream;
    this.stream = undefined;
    if (s) endQuietly(s);
  }

  /** send writes a cancel request on the open stream. */
  private send(request: IWatchRequest): void {
    if (!this.stream) return;
    try {
      this.write(this.stream, request);
    } catch {
      this.broken(this.stream);
    }
  }

  /** pump sends queued create requests while fewer than MAX_UNCONFIRMED are outstanding. */
  private pump(stream: Stream): void {
    try {
      for (const id of this.queued) {
        if (this.unconfirmed.size >= MAX_UNCONFIRMED || this.stream !== stream) return;
        this.queued.delete(id);
        const spec = this.watches.get(id);
        if (spec) this.write(stream, createRequest(id, spec));
      }
    } catch {
      this.broken(stream);
    }
  }

  private async open(): Promise<void> {
    let stream: Stream;
    try {
      stream = await this.rpc.client.watchClient.watch();
    } catch {
      this.opening = undefined;
      return this.loseAll();
    }
    this.opening = undefined;
    if (this.closed) return endQuietly(stream);
    this.stream = stream;
    stream.on('data', (res) => this.onResponse(res));
    stream.on('error', () => this.broken(stream));
    stream.on('end', () => this.broken(stream));
    // Not connected until now: every live watch is created on this stream, in order.
    for (const id of this.watches.keys()) this.queued.add(id);
    this.pump(stream);
  }

  /**
   * write sends a request; a create request must be confirmed within the call deadline, or the
   * stream is given up: an endpoint that accepts connections but never answers would otherwise
   * swallow every notification without a word.
   */
  private write(stream: Stream, request: IWatchRequest): void {
    const id = Number(request.create_request?.watch_id ?? 0);
    if (id) {
      const timer = setTimeout(() => this.broken(stream), this.rpc.callTimeoutMs);
      timer.unref();
      this.unconfirmed.set(id, timer);
    }
    stream.write(request);
  }

  private onResponse(res: IWatchResponse): void {
    const id = Number(res.watch_id);
    if (res.created || res.canceled) {
      // A refused create may come back canceled without created: it is answered either way.
      if (this.confirm(id) && this.stream) this.pump(this.stream);
    }
    const spec = this.watches.get(id);
    if (!spec) return; // an answer for a watch cancelled meanwhile
    if (res.canceled) {
      // Refused or cancelled by the server (e.g. its start revision was compacted).
      this.watches.delete(id);
      return spec.onLost();
    }
    if (res.events?.length) spec.onEvents(res.events);
  }

  /** confirm stops waiting for a create's confirmation; tells whether one was awaited. */
  private confirm(id: number): boolean {
    const timer = this.unconfirmed.get(id);
    if (!timer) return false;
    clearTimeout(timer);
    this.unconfirmed.delete(id);
    return true;
  }

  private broken(stream: Stream): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
    for (const id of [...this.unconfirmed.keys()]) this.confirm(id);
    endQuietly(stream);
    this.loseAll();
  }

  private loseAll(): void {
    const lost = [...this.watches.values()];
    this.watches.clear();
    this.queued.clear();
    for (const spec of lost) spec.onLost();
  }
}

function createRequest(id: number, spec: WatchSpec): IWatchRequest {
  const filters: ('Noput' | 'Nodelete')[] = [];
  if (spec.onlyDeletes) filters.push('Noput');
  if (spec.onlyPuts) filters.push('Nodelete');
  return { create_request: { key: spec.key, range_end: spec.rangeEnd, start_revision: spec.startRevision, watch_id: id, filters } };
}
