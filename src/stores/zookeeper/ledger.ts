import type { Ledger, LedgerEntry, LedgerPutResult } from '../../core/store.js';
import type { ZkLayout } from './layout.js';
import { ZK, type ZkModule } from './sdk.js';
import { codeOf, zxidNumber, type ZkSession } from './session.js';

/**
 * ZkLedger keeps ledger entries as persistent znodes `<root>/_baton/ledger/<key>` (key
 * percent-encoded, so `/` stays one znode). create-if-absent is `create` (NODE_EXISTS = lost
 * race); compare-and-set is `setData` on the znode's version. `version` is `<czxid>:<version>`.
 */
export class ZkLedger implements Ledger {
  private madeDir = false;

  constructor(
    private readonly sdk: () => ZkModule,
    private readonly layout: ZkLayout,
    private readonly session: () => Promise<ZkSession>,
    private readonly guard: () => void,
  ) {}

  async get(key: string): Promise<LedgerEntry | null> {
    this.guard();
    const s = await this.session();
    try {
      return await s.call<LedgerEntry>('ledger get', (c, done) =>
        c.getData(this.layout.ledgerPath(key), undefined, (err, data, stat) => done(err, stat && entry(key, data, stat.czxid, stat.version))),
      );
    } catch (err) {
      if (codeOf(err) === ZK.NO_NODE) return null;
      throw err;
    }
  }

  async put(key: string, expected: string | null, value: string): Promise<LedgerPutResult> {
    this.guard();
    const s = await this.session();
    const path = this.layout.ledgerPath(key);
    const data = Buffer.from(value, 'utf8');
    try {
      if (expected === null) {
        if (!this.madeDir) {
          await s.call<string>('ledger put', (c, done) => c.mkdirp(this.layout.ledgerDir, done));
          this.madeDir = true;
        }
        await s.call<string>('ledger put', (c, done) => c.create(path, data, this.sdk().ACL.OPEN_ACL_UNSAFE, ZK.PERSISTENT, done));
        const made = await this.get(key);
        return made ? { ok: true, entry: made } : { ok: false, current: null };
      }
      const m = /^(\d+):(\d+)$/.exec(expected);
      const current = await this.get(key);
      if (!m || !current || current.version !== expected) return { ok: false, current };
      const stat = await s.call<{ czxid: Buffer; version: number }>('ledger put', (c, done) => c.setData(path, data, Number(m[2]), done));
      return { ok: true, entry: { key, value, version: `${zxidNumber(stat.czxid)}:${stat.version}` } };
    } catch (err) {
      const code = codeOf(err);
      if (code === ZK.NODE_EXISTS || code === ZK.BAD_VERSION || code === ZK.NO_NODE) return { ok: false, current: await this.get(key) };
      throw err;
    }
  }

  /**
   * remove deletes the znode at the data version of `version` if it is still the same znode (its
   * czxid: a znode made again has a new one, so no version of an earlier life matches).
   */
  async remove(key: string, version: string): Promise<boolean> {
    this.guard();
    const m = /^(\d+):(\d+)$/.exec(version);
    if (!m || (await this.get(key))?.version !== version) return false;
    const s = await this.session();
    try {
      await s.call<void>('ledger remove', (c, done) => c.remove(this.layout.ledgerPath(key), Number(m[2]), (err) => done(err)));
      return true;
    } catch (err) {
      const code = codeOf(err);
      if (code === ZK.NO_NODE || code === ZK.BAD_VERSION) return false;
      throw err;
    }
  }

  async list(prefix: string, limit = 1000): Promise<LedgerEntry[]> {
    this.guard();
    const s = await this.session();
    let names: string[];
    try {
      names = await s.call<string[]>('ledger list', (c, done) => c.getChildren(this.layout.ledgerDir, undefined, (err, ch) => done(err, ch)));
    } catch (err) {
      if (codeOf(err) === ZK.NO_NODE) return [];
      throw err;
    }
    const keys = names.flatMap((n) => decodeKey(n)).filter((k) => k.startsWith(prefix)).sort().slice(0, limit);
    const got = await Promise.all(keys.map((k) => this.get(k)));
    return got.filter((e): e is LedgerEntry => e !== null);
  }
}

function entry(key: string, data: Buffer | undefined, czxid: Buffer, version: number): LedgerEntry {
  return { key, value: (data ?? Buffer.alloc(0)).toString('utf8'), version: `${zxidNumber(czxid)}:${version}` };
}

/** decodeKey reads a ledger znode's name back as its key; a name baton did not write is skipped. */
function decodeKey(name: string): string[] {
  try {
    return [decodeURIComponent(name)];
  } catch {
    return [];
  }
}
