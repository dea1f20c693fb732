/**
 * K8sLedger keeps ledger entries (cron slots, run-once outcomes) as Leases too, so the store needs
 * no permission beyond leases: one Lease per key, named by names.ts' ledgerNameOf, labelled
 * baton.dev/kind=ledger, with the key and the value in annotations (values up to 64 KiB fit in
 * the 256 KiB the API server allows for all annotations). The version is the resourceVersion:
 * put is a POST (create-if-absent) or a PUT on the expected resourceVersion; remove a DELETE
 * with that resourceVersion as its precondition. Nothing expires.
 * list reads every ledger Lease of the namespace (label selector) and filters by prefix here.
 */
import { StoreUnavailableError } from '../../core/errors.js';
import type { Ledger, LedgerEntry, LedgerPutResult } from '../../core/store.js';
import { statusMessage, type KubeResponse } from './client.js';
import { ANNOTATION, LABEL_KIND, type Lease, type LeaseList } from './codec.js';
import { ledgerNameOf } from './names.js';

/** Call sends one request to the API server. */
export type Call = (method: string, path: string, body?: unknown) => Promise<KubeResponse>;

/** K8sLedger: see the header comment. */
export class K8sLedger implements Ledger {
  constructor(private readonly call: Call, private readonly leasesPath: string) {}

  async get(key: string): Promise<LedgerEntry | null> {
    const lease = await this.read(ledgerNameOf(key));
    return lease ? toEntry(lease, key) : null;
  }

  async put(key: string, expected: string | null, value: string): Promise<LedgerPutResult> {
    const name = ledgerNameOf(key);
    let base: Lease | null = null;
    if (expected !== null) {
      base = await this.read(name);
      if (!base) return { ok: false, current: null };
      if (base.metadata.resourceVersion !== expected) return { ok: false, current: toEntry(base, key) };
    }
    const body: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        ...(base?.metadata ?? {}),
        name,
        labels: { ...(base?.metadata.labels ?? {}), [LABEL_KIND]: 'ledger' },
        annotations: { ...(base?.metadata.annotations ?? {}), [ANNOTATION.ledgerKey]: key, [ANNOTATION.ledgerValue]: value },
      },
      spec: base?.spec ?? {},
    };
    const res = base ? await this.call('PUT', `${this.leasesPath}/${name}`, body) : await this.call('POST', this.leasesPath, body);
    if (res.status === 200 || res.status === 201) return { ok: true, entry: toEntry(res.body as unknown as Lease, key) };
    if (res.status === 409) return { ok: false };
    if (res.status === 404) return { ok: false, current: null };
    throw failure(res, base ? 'PUT' : 'POST', name);
  }

  /** remove is a DELETE with the resourceVersion as its precondition (409: written since). */
  async remove(key: string, version: string): Promise<boolean> {
    const name = ledgerNameOf(key);
    const res = await this.call('DELETE', `${this.leasesPath}/${name}`, { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: version } });
    if (res.status === 200 || res.status === 202) return true;
    if (res.status === 409 || res.status === 404) return false;
    throw failure(res, 'DELETE', name);
  }

  async list(prefix: string, limit = 1000): Promise<LedgerEntry[]> {
    const res = await this.call('GET', `${this.leasesPath}?labelSelector=${encodeURIComponent(`${LABEL_KIND}=ledger`)}`);
    if (res.status !== 200) throw failure(res, 'GET', 'leases');
    return ((res.body as unknown as LeaseList).items ?? [])
      .map((l) => toEntry(l, l.metadata.annotations?.[ANNOTATION.ledgerKey] ?? ''))
      .filter((e) => e.key !== '' && e.key.startsWith(prefix))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .slice(0, limit);
  }

  private async read(name: string): Promise<Lease | null> {
    const res = await this.call('GET', `${this.leasesPath}/${name}`);
    if (res.status === 404) return null;
    if (res.status !== 200) throw failure(res, 'GET', name);
    return res.body as unknown as Lease;
  }
}

function toEntry(lease: Lease, key: string): LedgerEntry {
  return Object.freeze({ key, value: lease.metadata.annotations?.[ANNOTATION.ledgerValue] ?? '', version: String(lease.metadata.resourceVersion ?? '') });
}

function failure(res: KubeResponse, method: string, name: string): StoreUnavailableError {
  return new StoreUnavailableError(`k8s: ledger: ${method} leases/${name}: ${res.status} ${statusMessage(res.body)}`);
}
