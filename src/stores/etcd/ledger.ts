import type { IKeyValue } from 'etcd3';
import { InvalidConfigError } from '../../core/errors.js';
import type { Ledger, LedgerEntry, LedgerPutResult } from '../../core/store.js';
import type { Rpc } from './client.js';
import { prefixEnd, type KeyLayout } from './keys.js';

const MAX_KEY = 512;
const MAX_VALUE = 64 * 1024;

/**
 * EtcdLedger keeps ledger entries as plain keys (no lease: they never expire) under
 * `<prefix><ledgerPrefix>`. `version` is the key's mod revision, so compare-and-set is a txn
 * comparing it; create-if-absent compares the create revision with 0.
 */
export class EtcdLedger implements Ledger {
  constructor(
    private readonly rpc: Rpc,
    private readonly layout: KeyLayout,
    private readonly guard: () => void,
  ) {}

  async get(key: string): Promise<LedgerEntry | null> {
    this.guard();
    const res = await this.rpc.call('ledger get', (o) => this.rpc.client.kv.range({ key: Buffer.from(this.layout.ledgerKey(key)) }, o));
    return res.kvs[0] ? this.toEntry(res.kvs[0]) : null;
  }

  async put(key: string, expected: string | null, value: string): Promise<LedgerPutResult> {
    this.guard();
    if (key.length === 0 || key.length > MAX_KEY) throw new InvalidConfigError(`ledger: key must be 1–${MAX_KEY} characters`);
    if (Buffer.byteLength(value) > MAX_VALUE) throw new InvalidConfigError(`ledger: value is over ${MAX_VALUE} bytes`);
    if (expected !== null && !/^\d+$/.test(expected)) return { ok: false, current: await this.get(key) };
    const k = Buffer.from(this.layout.ledgerKey(key));
    const v = Buffer.from(value);
    const res = await this.rpc.call('ledger put', (o) =>
      this.rpc.client.kv.txn(
        {
          compare: [
            expected === null
              ? { key: k, target: 'Create', result: 'Equal', create_revision: 0 }
              : { key: k, target: 'Mod', result: 'Equal', mod_revision: expected },
          ],
          success: [{ request_put: { key: k, value: v } }],
          failure: [{ request_range: { key: k } }],
        },
        o,
      ),
    );
    if (!res.succeeded) {
      const kv = res.responses[0]!.response_range.kvs[0];
      return { ok: false, current: kv ? this.toEntry(kv) : null };
    }
    return { ok: true, entry: Object.freeze({ key, value, version: res.header.revision }) };
  }

  /** remove deletes the key if its mod revision is still `version` (revisions are never reused). */
  async remove(key: string, version: string): Promise<boolean> {
    this.guard();
    if (!/^\d+$/.test(version)) return false;
    const k = Buffer.from(this.layout.ledgerKey(key));
    const res = await this.rpc.call('ledger remove', (o) =>
      this.rpc.client.kv.txn({ compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: version }], success: [{ request_delete_range: { key: k } }] }, o),
    );
    return res.succeeded;
  }

  async list(prefix: string, limit = 1000): Promise<LedgerEntry[]> {
    this.guard();
    const start = Buffer.from(this.layout.ledgerKey(prefix));
    const res = await this.rpc.call('ledger list', (o) =>
      this.rpc.client.kv.range({ key: start, range_end: prefixEnd(start), sort_order: 'Ascend', sort_target: 'Key', limit }, o),
    );
    return res.kvs.map((kv) => this.toEntry(kv));
  }

  private toEntry(kv: IKeyValue): LedgerEntry {
    return Object.freeze({ key: kv.key.toString().slice(this.layout.ledgerRoot.length), value: kv.value.toString(), version: kv.mod_revision });
  }
}
