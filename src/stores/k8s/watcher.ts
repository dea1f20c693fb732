/**
 * LeaseWatch keeps one watch on one Lease (by name) for as long as someone watches its lock,
 * the way informers do: LIST the one object (fieldSelector=metadata.name=NAME) for a
 * resourceVersion, then WATCH from it with timeoutSeconds; when the server ends the stream,
 * watch again from the last version seen (BOOKMARKs move it too); on 410 Gone, list again.
 *
 * A watch stream can die without a word (a frozen server, a dropped connection that sends no
 * reset), so a stream silent for longer than its own timeout (plus the request timeout) is given
 * up and replaced. While no stream is open `live` is false: listeners were told once with
 * `undefined` (read it yourself; the elector polls meanwhile), and are told again with the
 * listed record once a new stream is open.
 */
import { WatchRefusedError, type KubeClient, type KubeResponse, type WatchEvent } from './client.js';
import type { Lease, LeaseList } from './codec.js';

/** LeaseWatchOptions wires one watch to its store. */
export interface LeaseWatchOptions {
  client: KubeClient;
  /** Path of the namespace's leases, e.g. /apis/coordination.k8s.io/v1/namespaces/NS/leases. */
  leasesPath: string;
  name: string;
  watchTimeoutMs: number;
  requestTimeoutMs: number;
  /** The Lease as it now is (null: deleted), or undefined: it may have changed, read it. */
  onChange(lease: Lease | null | undefined): void;
  /** A failure of the watch (reported, never thrown). */
  onError(err: unknown): void;
  /** The error for a list or watch the server refused (401, 403), as the store words it. */
  refused(res: KubeResponse, method: string): Error;
}

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 2_000;

/** GoneError: the version we asked to watch from is too old (410); list again. */
class GoneError extends Error {}

/** LeaseWatch: see the header comment. `start` once, `stop` once. */
export class LeaseWatch {
  private stopped = false;
  private readonly abort = new AbortController();
  private liveNow = false;
  private version?: string;
  private listedOnce = false;
  private wake?: () => void;

  constructor(private readonly o: LeaseWatchOptions) {}

  /** live tells whether a watch stream is open now. */
  get live(): boolean {
    return this.liveNow;
  }

  start(): void {
    void this.loop();
  }

  stop(): void {
    this.stopped = true;
    this.liveNow = false;
    this.abort.abort();
    this.wake?.();
  }

  private async loop(): Promise<void> {
    let retryMs = FIRST_RETRY_MS;
    const selector = `fieldSelector=${encodeURIComponent(`metadata.name=${this.o.name}`)}`;
    while (!this.stopped) {
      try {
        if (this.version === undefined) {
          const res = await this.o.client.request('GET', `${this.o.leasesPath}?${selector}`);
          if (res.status === 401 || res.status === 403) throw this.o.refused(res, 'LIST');
          if (res.status !== 200) throw new Error(`list answered ${res.status}`);
          const list = res.body as unknown as LeaseList;
          this.version = list.metadata?.resourceVersion;
          if (this.stopped) return;
          // The first list only starts the watch; a later one follows a gap: tell the listeners.
          if (this.listedOnce) this.o.onChange(list.items?.[0] ?? null);
          this.listedOnce = true;
        }
        const timeoutSeconds = Math.max(1, Math.round(this.o.watchTimeoutMs / 1000));
        const path = `${this.o.leasesPath}?watch=1&${selector}&allowWatchBookmarks=true&timeoutSeconds=${timeoutSeconds}` +
          (this.version ? `&resourceVersion=${encodeURIComponent(this.version)}` : '');
        await this.o.client.watch(path, this.o.watchTimeoutMs + this.o.requestTimeoutMs, this.abort.signal, () => {
          this.liveNow = !this.stopped;
          retryMs = FIRST_RETRY_MS;
        }, (event) => this.onEvent(event));
        // The server ended the stream at its timeout: watch again from where we are, no gap.
      } catch (err) {
        if (this.stopped) return;
        if (err instanceof GoneError) {
          this.version = undefined; // list again at once: the list tells the listeners
          continue;
        }
        if (err instanceof WatchRefusedError) err = this.o.refused(err.response, 'WATCH');
        const wasLive = this.liveNow;
        this.liveNow = false;
        // Events may be missed from now on: list afresh before the next watch.
        this.version = undefined;
        this.o.onError(err);
        if (wasLive) this.o.onChange(undefined);
        await this.sleep(retryMs);
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      }
    }
  }

  private onEvent(event: WatchEvent): void {
    const object = event.object as unknown as Lease & { code?: number; metadata?: { resourceVersion?: string } };
    if (event.type === 'ERROR') {
      if ((object as { code?: number }).code === 410) throw new GoneError('resource version too old');
      throw new Error(`watch error: ${String((object as { message?: string }).message ?? 'unknown')}`);
    }
    if (object?.metadata?.resourceVersion) this.version = object.metadata.resourceVersion;
    if (event.type === 'BOOKMARK') return;
    if (object?.metadata?.name !== this.o.name) return;
    this.o.onChange(event.type === 'DELETED' ? null : object);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
