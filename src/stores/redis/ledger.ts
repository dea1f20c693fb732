import type { Redis } from 'ioredis';
import type { Ledger, LedgerEntry, LedgerPutResult } from '../../core/store.js';
import { LEDGER_PUT_LUA, LEDGER_REMOVE_LUA, LuaScript } from './scripts.js';

const putScript = new LuaScript(LEDGER_PUT_LUA);
const removeScript = new LuaScript(LEDGER_REMOVE_LUA);

/** LedgerDeps is what RedisLedger needs from its store. */
export interface LedgerDeps {
  client: Redis;
  /** Key prefix of ledger entries, e.g. `baton:ledger:`. */
  keyPrefix: string;
  /** The string key holding the highest version of a removed entry, e.g. `baton:ledger-floor`. */
  floorKey: string;
  /** Runs an operation with the store's timeout and error translation. */
  run<T>(what: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * RedisLedger keeps each entry as a hash `<prefix>ledger:<key>` = {value, version} with no TTL
 * (durable as the server's AOF). `version` is bumped by LEDGER_PUT_LUA on every write, in the
 * same script that compares it. `remove` (LEDGER_REMOVE_LUA) raises `<prefix>ledger-floor` to
 * the removed version, and a new entry starts above the floor, so a version is never reused.
 * (Both scripts touch two keys with no common hash tag: the store runs on one primary.)
 * `list` SCANs (never KEYS) for the prefix, then sorts and fetches the first `limit` entries.
 */
export class RedisLedger implements Ledger {
  constructor(private readonly deps: LedgerDeps) {}

  async get(key: string): Promise<LedgerEntry | null> {
    return this.deps.run('ledger get', async () => toEntry(key, await this.deps.client.hmget(this.keyOf(key), 'value', 'version')));
  }

  async put(key: string, expected: string | null, value: string): Promise<LedgerPutResult> {
    return this.deps.run('ledger put', async () => {
      const reply = (await putScript.run(this.deps.client, { keys: [this.keyOf(key), this.deps.floorKey], args: [expected ?? '', value] })) as unknown[];
      const entry = reply.length > 1 ? Object.freeze({ key, value: String(reply[1]), version: String(reply[2]) }) : null;
      if (Number(reply[0]) === 1 && entry) return { ok: true, entry };
      return { ok: false, current: entry };
    });
  }

  async list(prefix: string, limit = 1000): Promise<LedgerEntry[]> {
    return this.deps.run('ledger list', async () => {
      const client = this.deps.client;
      const keys: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = await client.scan(cursor, 'MATCH', `${globEscape(this.deps.keyPrefix + prefix)}*`, 'COUNT', 1000, 'TYPE', 'hash');
        cursor = next;
        keys.push(...batch);
      } while (cursor !== '0');
      const wanted = [...new Set(keys)].map((k) => k.slice(this.deps.keyPrefix.length)).sort(byCodeUnit).slice(0, limit);
      if (wanted.length === 0) return [];
      const pipeline = client.pipeline();
      for (const key of wanted) pipeline.hmget(this.keyOf(key), 'value', 'version');
      const replies = (await pipeline.exec()) ?? [];
      const entries: LedgerEntry[] = [];
      replies.forEach(([err, reply], i) => {
        if (err) throw err;
        const entry = toEntry(wanted[i]!, reply as (string | null)[]);
        if (entry) entries.push(entry);
      });
      return entries;
    });
  }

  async remove(key: string, version: string): Promise<boolean> {
    return this.deps.run('ledger remove', async () => Number(await removeScript.run(this.deps.client, { keys: [this.keyOf(key), this.deps.floorKey], args: [version] })) === 1);
  }

  private keyOf(key: string): string {
    return this.deps.keyPrefix + key;
  }
}

function toEntry(key: string, reply: (string | null)[] | null | undefined): LedgerEntry | null {
  if (!reply || reply[1] === null || reply[1] === undefined) return null;
  return Object.freeze({ key, value: reply[0] ?? '', version: String(reply[1]) });
}

/** globEscape makes a literal SCAN MATCH pattern of `text`. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/** byCodeUnit orders strings as SQL and the other stores do, not by locale. */
export function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
