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
    const s = this.stream;
    this.stream = undefined;
    if (s) endQuietly(s);
  }

  private send(request: IWatchRequest): void {
    if (this.stream) {
      try {
        this.stream.write(request);
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
      for (const [id, spec] of this.watches) stream.write(createRequest(id, spec));
    } catch {
      this.broken(stream);
    }
  }

  private onResponse(res: IWatchResponse): void {
    const id = Number(res.watch_id);
    const spec = this.watches.get(id);
    if (!spec) return; // an answer for a watch cancelled meanwhile
    if (res.canceled) {
      // Refused or cancelled by the server (e.g. its start revision was compacted).
      this.watches.delete(id);
      return spec.onLost();
    }
    if (res.events?.length) spec.onEvents(res.events);
  }

  private broken(stream: Stream): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
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
