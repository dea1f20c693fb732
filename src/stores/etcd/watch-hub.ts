import type { IDuplexStream, IEvent, IWatchRequest, IWatchResponse } from 'etcd3';
import type { Rpc } from './client.js';
import { endQuietly } from './keepalive.js';

type Stream = IDuplexStream<IWatchRequest, IWatchResponse>;

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
 */
export class WatchHub {
  private stream?: Stream;
  private opening?: Promise<void>;
  /** Create requests not yet confirmed, with the timer that gives up on the stream. */
  private readonly unconfirmed = new Map<number, NodeJS.Timeout>();
  private readonly watches = new Map<number, WatchSpec>();
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
    this.send(createRequest(id, spec));
    return () => {
      if (this.watches.delete(id) && this.stream) this.send({ cancel_request: { watch_id: id } });
    };
  }

  /** close ends the stream; watches end without `onLost`. */
  close(): void {
    this.closed = true;
    this.watches.clear();
    for (const id of [...this.unconfirmed.keys()]) this.confirm(id);
    const s = this.stream;
    this.stream = undefined;
    if (s) endQuietly(s);
  }

  private send(request: IWatchRequest): void {
    if (this.stream) {
      try {
        this.write(this.stream, request);
      } catch {
        this.broken(this.stream);
      }
      return;
    }
    // Not connected: the create requests of every live watch are sent when the stream opens.
    if (!this.opening) this.opening = this.open();
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
    try {
      for (const [id, spec] of this.watches) this.write(stream, createRequest(id, spec));
    } catch {
      this.broken(stream);
    }
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
    if (res.created) this.confirm(id);
    const spec = this.watches.get(id);
    if (!spec) return; // an answer for a watch cancelled meanwhile
    if (res.canceled) {
      // Refused or cancelled by the server (e.g. its start revision was compacted).
      this.watches.delete(id);
      return spec.onLost();
    }
    if (res.events?.length) spec.onEvents(res.events);
  }

  private confirm(id: number): void {
    clearTimeout(this.unconfirmed.get(id));
    this.unconfirmed.delete(id);
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
    for (const spec of lost) spec.onLost();
  }
}

function createRequest(id: number, spec: WatchSpec): IWatchRequest {
  const filters: ('Noput' | 'Nodelete')[] = [];
  if (spec.onlyDeletes) filters.push('Noput');
  if (spec.onlyPuts) filters.push('Nodelete');
  return { create_request: { key: spec.key, range_end: spec.rangeEnd, start_revision: spec.startRevision, watch_id: id, filters } };
}
