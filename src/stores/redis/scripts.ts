import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * WRITE_LUA is the one compare-and-set every lease write goes through: acquire (newTerm),
 * renew, the step-down flag, and release (holder null). Running as a script makes the read,
 * the comparison, the counter bumps, the write and the PUBLISH one atomic step.
 *
 * KEYS[1] lease hash, KEYS[2] counter hash (same hash tag, so the same cluster slot).
 * ARGV: expected revision ('' = create-if-absent), newTerm '1'|'0', holder, free '1'|'0'
 * (holder null: release), step '1'|'0', ttl ms, data JSON, channel.
 * Returns {1, rev, term, holder, step, data} on success; on a lost race {0} when the lease key
 * is absent, else {0, rev, term, holder, step, data} of the current record.
 */
export const WRITE_LUA = `
local lease, counter = KEYS[1], KEYS[2]
local expected, new_term, holder, free, step, ttl, data, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local cur = redis.call('HMGET', lease, 'rev', 'term', 'holder', 'step', 'data')
local exists = cur[1] ~= false
if (expected == '' and exists) or (expected ~= '' and exists and cur[1] ~= expected) then
  return {0, cur[1], cur[2] or '0', cur[3] or '', cur[4] or '0', cur[5] or '{}'}
end
if expected ~= '' and not exists then return {0} end
-- Revisions come from the counter, which outlives the lease key: one is never handed out twice.
local rev = string.format('%d', redis.call('HINCRBY', counter, 'rev', 1))
local term
if new_term == '1' then
  local t = redis.call('HINCRBY', counter, 'term', 1)
  -- Should the counter ever have been lost while a lease lived on, never go below that lease.
  if exists and t <= tonumber(cur[2]) then
    t = tonumber(cur[2]) + 1
    redis.call('HSET', counter, 'term', string.format('%d', t))
  end
  term = string.format('%d', t)
elseif exists then
  term = cur[2]
else
  term = redis.call('HGET', counter, 'term') or '0'
end
if free == '1' then
  if exists then
    redis.call('DEL', lease)
    redis.call('PUBLISH', channel, 'null')
  end
  return {1, rev, term, '', '0', data}
end
redis.call('HSET', lease, 'rev', rev, 'term', term, 'holder', holder, 'step', step, 'data', data)
-- The server's own timer ends the lease. A step-down request keeps the time left: it must
-- not lengthen a lease its holder may no longer be renewing.
if not exists or step == '0' then redis.call('PEXPIRE', lease, ttl) end
-- Every write is news, plain renewals too: a standby times the key's expiry from the last one
-- it heard, and claims the lease the moment the server drops it (RedisStore.watchSeesRenewals).
redis.call('PUBLISH', channel, cjson.encode({rev, term, holder, step, data}))
return {1, rev, term, holder, step, data}
`;

/**
 * RENEW_LUA renews many leases as they are, each on its own compare of the revision: the
 * renewal-only batch (RedisStore.renewRevisions). Per lease it reads the record's fields, bumps
 * the counter, rewrites `rev` and the `renewedAt` number inside `data` (a text substitution: the
 * record is not decoded), restarts the server's timer, and publishes the new record on the
 * lock's channel (`<prefix>{<lock>}:events`, the lease key with `lease` replaced), as WRITE_LUA
 * does for every write.
 *
 * KEYS: lease, counter of the first lease, lease, counter of the second, …
 * ARGV: expected revision, renewedAt, ttl ms of the first lease, then of the second, …
 * Returns one entry per lease: its new revision, or false (nil) when the lease is not at the
 * expected revision (absent included).
 */
export const RENEW_LUA = `
local out = {}
for i = 1, #KEYS / 2 do
  local lease, counter = KEYS[2 * i - 1], KEYS[2 * i]
  local cur = redis.call('HMGET', lease, 'rev', 'step', 'data', 'term', 'holder')
  if cur[1] and cur[1] == ARGV[3 * i - 2] then
    local rev = string.format('%d', redis.call('HINCRBY', counter, 'rev', 1))
    -- The first "renewedAt" is the record's own: data is written with metadata last.
    local data = string.gsub(cur[3] or '{}', '"renewedAt":[^,}]*', '"renewedAt":' .. ARGV[3 * i - 1], 1)
    redis.call('HSET', lease, 'rev', rev, 'data', data)
    -- As in WRITE_LUA: a lease whose step-down flag is set keeps the time it has left.
    if cur[2] ~= '1' then redis.call('PEXPIRE', lease, ARGV[3 * i]) end
    -- As WRITE_LUA does for every write: standbys time the expiry from the last renewal heard.
    redis.call('PUBLISH', string.sub(lease, 1, -6) .. 'events', cjson.encode({rev, cur[4] or '0', cur[5] or '', cur[2] or '0', data}))
    out[i] = rev
  else
    out[i] = false
  end
end
return out
`;

/**
 * LEDGER_PUT_LUA is the ledger's compare-and-set. KEYS[1] entry hash, KEYS[2] the floor (the
 * highest version of a removed entry); ARGV expected version ('' = create-if-absent), value.
 * A new entry's versions start above the floor. Returns {1, value, version} or {0[, value, version]}.
 */
export const LEDGER_PUT_LUA = `
local cur = redis.call('HMGET', KEYS[1], 'value', 'version')
if ARGV[1] == '' then
  if cur[2] then return {0, cur[1] or '', cur[2]} end
  redis.call('HSET', KEYS[1], 'version', redis.call('GET', KEYS[2]) or '0')
elseif not cur[2] then
  return {0}
elseif cur[2] ~= ARGV[1] then
  return {0, cur[1] or '', cur[2]}
end
local version = string.format('%d', redis.call('HINCRBY', KEYS[1], 'version', 1))
redis.call('HSET', KEYS[1], 'value', ARGV[2])
return {1, ARGV[2], version}
`;

/**
 * LEDGER_REMOVE_LUA is the ledger's compare-and-delete. KEYS[1] entry hash, KEYS[2] the floor;
 * ARGV[1] expected version. Deletes the entry and raises the floor to its version; returns 1,
 * or 0 when the entry is absent or at another version.
 */
export const LEDGER_REMOVE_LUA = `
local cur = redis.call('HGET', KEYS[1], 'version')
if not cur or cur ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if tonumber(cur) > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], cur) end
return 1
`;

/** ScriptCall is one invocation of a script: its keys and arguments. */
export interface ScriptCall {
  keys: string[];
  args: (string | number)[];
}

/**
 * LuaScript runs a script by EVALSHA and falls back to EVAL when the server answers NOSCRIPT
 * (a restarted or flushed server has an empty script cache). NOSCRIPT means the script did
 * not run, so the retry cannot apply a write twice.
 */
export class LuaScript {
  readonly sha: string;
  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(client: Redis, call: ScriptCall): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, call.keys.length, ...call.keys, ...call.args);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return client.eval(this.lua, call.keys.length, ...call.keys, ...call.args);
    }
  }

  /**
   * runMany sends every call in one pipeline (one round trip). Each call is its own atomic
   * script, so calls on different keys never need one cluster slot. Calls that met NOSCRIPT are
   * sent again with EVAL in a second pipeline. Throws the first other error.
   */
  async runMany(client: Redis, calls: readonly ScriptCall[]): Promise<unknown[]> {
    const results: unknown[] = new Array(calls.length);
    let pending = calls.map((_, i) => i);
    for (const mode of ['evalsha', 'eval'] as const) {
      if (pending.length === 0) break;
      const pipeline = client.pipeline();
      for (const i of pending) {
        const c = calls[i]!;
        if (mode === 'evalsha') pipeline.evalsha(this.sha, c.keys.length, ...c.keys, ...c.args);
        else pipeline.eval(this.lua, c.keys.length, ...c.keys, ...c.args);
      }
      const replies = (await pipeline.exec()) ?? [];
      const retry: number[] = [];
      pending.forEach((index, k) => {
        const [err, value] = replies[k] ?? [new Error('no reply in the pipeline')];
        if (err && mode === 'evalsha' && isNoScript(err)) retry.push(index);
        else if (err) throw err;
        else results[index] = value;
      });
      pending = retry;
    }
    return results;
  }
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.includes('NOSCRIPT');
}
