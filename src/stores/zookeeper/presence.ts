import type { Presence } from '../../core/store.js';
import type { ZkLayout } from './layout.js';
import { ZK, type ZkModule } from './sdk.js';
import { codeOf, type ZkSession } from './session.js';

/**
 * ZkPresence keeps registry entries as ephemeral znodes of the handle's base session
 * (core/store.ts, Presence): `<root>/_baton/present/<lock>/<identity>`, so they cost nothing at
 * rest beyond the session's own heartbeats, and ZooKeeper deletes them when the session ends (the
 * process died, or was cut off for a whole session timeout). After a new session (`restore`)
 * this handle writes its announced entries again.
 */
export class ZkPresence implements Presence {
  /** Announced values, by znode path. */
  private readonly values = new Map<string, { dir: string; value: string }>();
  private readonly dirs = new Set<string>();

  constructor(
    private readonly sdk: () => ZkModule,
    private readonly layout: ZkLayout,
    private readonly session: () => Promise<ZkSession>,
    private readonly guard: () => void,
  ) {}

  async announce(lock: string, identity: string, value: string): Promise<void> {
    this.guard();
    const dir = this.layout.presenceDir(lock);
    const path = `${dir}/${encodeURIComponent(identity)}`;
    this.values.set(path, { dir, value });
    await this.write(path, dir, value);
  }

  async withdraw(lock: string, identity: string): Promise<void> {
    this.guard();
    const path = `${this.layout.presenceDir(lock)}/${encodeURIComponent(identity)}`;
    if (!this.values.delete(path)) return;
    const s = await this.session();
    try {
      await s.call<void>('withdraw announcement', (c, done) => c.remove(path, -1, (err) => done(err)));
    } catch (err) {
      if (codeOf(err) !== ZK.NO_NODE) throw err;
    }
  }

  async list(lock: string): Promise<string[]> {
    this.guard();
    const dir = this.layout.presenceDir(lock);
    const s = await this.session();
    let names: string[];
    try {
      names = await s.call<string[]>('list candidates', (c, done) => c.getChildren(dir, undefined, (err, ch) => done(err, ch)));
    } catch (err) {
      if (codeOf(err) === ZK.NO_NODE) return [];
      throw err;
    }
    const read = async (name: string): Promise<string | null> => {
      try {
        return await s.call<string>('list candidates', (c, done) => c.getData(`${dir}/${name}`, undefined, (err, data) => done(err, (data ?? Buffer.alloc(0)).toString('utf8'))));
      } catch (err) {
        // Gone between the listing and the read: its candidate left.
        if (codeOf(err) === ZK.NO_NODE) return null;
        throw err;
      }
    };
    return (await Promise.all(names.sort().map(read))).filter((v): v is string => v !== null);
  }

  /** restore writes every announced entry again: a new session has none of the old one's ephemeral nodes. */
  restore(): void {
    for (const [path, { dir, value }] of this.values) void this.write(path, dir, value).catch(() => {});
  }

  /** write creates the ephemeral node, or rewrites one this session already holds. */
  private async write(path: string, dir: string, value: string): Promise<void> {
    const s = await this.session();
    const data = Buffer.from(value, 'utf8');
    if (!this.dirs.has(dir)) {
      await s.call<string>('announce', (c, done) => c.mkdirp(dir, done));
      this.dirs.add(dir);
    }
    try {
      await s.call<string>('announce', (c, done) => c.create(path, data, this.sdk().ACL.OPEN_ACL_UNSAFE, ZK.EPHEMERAL, done));
    } catch (err) {
      // Its directory deleted behind our back (an operator cleaning up): made again next time.
      if (codeOf(err) === ZK.NO_NODE) this.dirs.delete(dir);
      if (codeOf(err) !== ZK.NODE_EXISTS) throw err;
      await s.call<unknown>('announce', (c, done) => c.setData(path, data, -1, done));
    }
  }
}
