import type { Result } from 'ioredis';
import type { RedisConnection } from '../redis.js';

// A key space of its own in Redis, bounded in bytes, for what any caller can make the facade keep
// (APQ documents, answers): one key per entry, written with `SET … PX` its lifetime, and an index
// that counts the bound, changed only by these scripts, with the entries, so that it matches Redis.
// Past the bound the entries soonest to expire are evicted, and only those, never another key.
// The scripts drop entries they were not given as keys, so every key of a space shares one hash
// slot, its tag (`{apq}`, `{response}`): on a Cluster a space lives on one master.
//
// An entry may have an owner (the response cache's session: `<owner>:<rest>` is its name), who
// keeps at most a share of the bound and can be evicted in one step that never walks what it
// kept: its eviction key says when, and an entry that began before it is not kept or served.

// KEYS of every script: sizes (name -> bytes counted), expiry (a sorted set, ms), bytes (the total),
// owners (owner -> bytes), latest (owner -> its entries' latest expiry, ms), the entry, the owner's
// eviction.
const INDEX = ['index:sizes', 'index:expiry', 'index:bytes', 'index:owners', 'index:latest'];

// ARGV: name, now (ms), ms to extend its life by from now (0: as it is). Returns [value, ms left,
// evicted at or ''], or nil.
const GET_SCRIPT = `
local value = redis.call('GET', KEYS[6])
if not value then return false end
local touch = tonumber(ARGV[3])
if touch > 0 then
  redis.call('PEXPIRE', KEYS[6], touch)
  redis.call('ZADD', KEYS[2], tonumber(ARGV[2]) + touch, ARGV[1])
  for i = 1, 5 do
    if redis.call('PTTL', KEYS[i]) < touch then redis.call('PEXPIRE', KEYS[i], touch) end
  end
end
return {value, redis.call('PTTL', KEYS[6]), redis.call('GET', KEYS[7]) or ''}
`;

// ARGV: name, owner ('' for none), value, ttl (ms), now (ms), since (ms: when what it holds began),
// bound, share (bytes), overhead per entry and per owner (bytes), entries to purge or evict at
// most, how long an eviction is remembered at least (ms). Returns 1 when kept.
const SET_SCRIPT = `
local sizes, expiry, bytes, owners, latest = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local entry = KEYS[6]
local name, owner, value = ARGV[1], ARGV[2], ARGV[3]
local ttl, now, since = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local bound, share = tonumber(ARGV[7]), tonumber(ARGV[8])
local overhead, perOwner = tonumber(ARGV[9]), tonumber(ARGV[10])
local room, readMs = tonumber(ARGV[11]), tonumber(ARGV[12])
local evicted = redis.call('GET', KEYS[7])
if evicted and tonumber(evicted) >= since then return 0 end
local prefix = string.sub(entry, 1, #entry - #name)
local evictedPrefix = string.sub(KEYS[7], 1, #KEYS[7] - #owner)
local total = tonumber(redis.call('GET', bytes) or '0')
local function ownerOf(gone)
  local at = string.find(gone, ':', 1, true)
  if not at then return '' end
  return string.sub(gone, 1, at - 1)
end
local function drop(gone)
  local size = tonumber(redis.call('HGET', sizes, gone) or '0')
  redis.call('HDEL', sizes, gone)
  redis.call('ZREM', expiry, gone)
  redis.call('DEL', prefix .. gone)
  total = total - size
  local of = ownerOf(gone)
  if of ~= '' and redis.call('HINCRBY', owners, of, -size) <= 0 then
    redis.call('HDEL', owners, of)
    redis.call('HDEL', latest, of)
    total = total - perOwner - #of
    -- Its eviction guarded entries that are gone: it now guards only reads still running.
    local mark = evictedPrefix .. of
    if redis.call('PTTL', mark) > readMs then redis.call('PEXPIRE', mark, readMs) end
  end
end
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, room)) do
  drop(gone)
end
if redis.call('HEXISTS', sizes, name) == 1 then drop(name) end
local size = #value + #entry + 2 * #name + overhead
-- What keeping it adds at most: its owner's count may be new.
local adds = size
local owned = 0
if owner ~= '' then
  adds = size + perOwner + #owner
  owned = tonumber(redis.call('HGET', owners, owner) or '0')
end
local kept = 0
if owned + adds <= share then
  while total + adds > bound and room > 0 do
    local soonest = redis.call('ZRANGE', expiry, 0, 0)[1]
    if not soonest then
      -- Nothing indexed is left to count (keys lost outside this script): start again empty.
      redis.call('DEL', sizes, owners, latest)
      total = 0
      break
    end
    drop(soonest)
    room = room - 1
  end
  if total + adds <= bound then
    redis.call('SET', entry, value, 'PX', ttl)
    redis.call('HSET', sizes, name, size)
    redis.call('ZADD', expiry, now + ttl, name)
    total = total + size
    if owner ~= '' then
      if redis.call('HINCRBY', owners, owner, size) == size then
        total = total + perOwner + #owner
      end
      if now + ttl > tonumber(redis.call('HGET', latest, owner) or '0') then
        redis.call('HSET', latest, owner, now + ttl)
      end
    end
    kept = 1
  end
end
if total < 0 then total = 0 end
local longest = math.max(redis.call('PTTL', expiry), ttl)
redis.call('SET', bytes, total, 'PX', longest)
for _, key in ipairs({sizes, expiry, owners, latest}) do redis.call('PEXPIRE', key, longest) end
return kept
`;

// KEYS: as the others. ARGV: owner, now (ms), how long to remember it at least (ms). The eviction
// outlives the owner's entries kept so far, and no more: an owner that kept nothing (a refused
// caller) leaves a key that expires with the minimum.
const EVICT_SCRIPT = `
local now = tonumber(ARGV[2])
local at = now
local before = tonumber(redis.call('GET', KEYS[7]) or '0')
if before > at then at = before end
local last = tonumber(redis.call('HGET', KEYS[5], ARGV[1]) or '0')
local ttl = math.max(last - now, tonumber(ARGV[3]), redis.call('PTTL', KEYS[7]))
redis.call('SET', KEYS[7], at, 'PX', ttl)
return 1
`;

// The scripts defineCommand adds, declared as ioredis's example does.
declare module 'ioredis' {
  interface RedisCommander<Context> {
    facadeBoundedGet(
      ...keysAndArgs: Array<string | number>
    ): Result<[string, number, string] | null, Context>;
    facadeBoundedSet(...keysAndArgs: Array<string | number>): Result<number, Context>;
    facadeBoundedEvict(...keysAndArgs: Array<string | number>): Result<number, Context>;
  }
}

export interface BoundedSpaceOptions {
  /** The hash tag all its keys share, `apq` for `{apq}:…`. */
  tag: string;
  /** What an entry is called in its key, `document` for `{apq}:document:<name>`. */
  entry: string;
  /** The bound, in bytes, as Redis's used_memory grows with it. */
  boundBytes: number;
  /** The most one owner keeps, in bytes; the bound when entries have no owner. */
  shareBytes?: number | undefined;
  /** What used_memory grows by beyond the strings counted, per entry and per owner. */
  entryOverheadBytes: number;
  ownerOverheadBytes?: number | undefined;
  /** Entries purged or evicted per write at most: no script holds Redis for long. */
  purgePerWrite: number;
  /** How long an eviction is remembered at least. */
  evictionMinMs?: number | undefined;
}

export interface Kept {
  value: string;
  msLeft: number;
  /** When its owner was last evicted (ms), or undefined. */
  evictedAt: number | undefined;
}

/**
 * A bounded key space in Redis. Every call goes through `redis.run` and rejects as it does: the
 * caller falls back to memory.
 */
export interface BoundedSpace {
  get(name: string, touchMs?: number): Promise<Kept | null>;
  /** True when kept; `since` is when what it holds began (an entry older than an eviction is not). */
  set(
    name: string,
    value: string,
    ttlMs: number,
    options?: { owner?: string; since?: number },
  ): Promise<boolean>;
  /** Forgets every entry of `owner` at once, by one key. */
  evictOwner(owner: string): Promise<void>;
}

export function createBoundedSpace(
  redis: RedisConnection,
  options: BoundedSpaceOptions,
): BoundedSpace {
  const { client } = redis;
  client.defineCommand('facadeBoundedGet', { numberOfKeys: 7, lua: GET_SCRIPT });
  client.defineCommand('facadeBoundedSet', { numberOfKeys: 7, lua: SET_SCRIPT });
  client.defineCommand('facadeBoundedEvict', { numberOfKeys: 7, lua: EVICT_SCRIPT });
  const tag = `{${options.tag}}:`;
  const index = INDEX.map((name) => tag + name);
  const keys = (name: string, owner: string) => [
    ...index,
    `${tag}${options.entry}:${name}`,
    `${tag}evicted:${owner}`,
  ];
  const evictionMinMs = options.evictionMinMs ?? 60_000;
  return {
    async get(name, touchMs = 0) {
      const found = await redis.run(() =>
        client.facadeBoundedGet(...keys(name, ownerOf(name)), name, Date.now(), touchMs),
      );
      if (!found) return null;
      const [value, msLeft, evicted] = found;
      return {
        value,
        msLeft: Number(msLeft),
        evictedAt: evicted === '' ? undefined : Number(evicted),
      };
    },
    async set(name, value, ttlMs, { owner = '', since = 0 } = {}) {
      const kept = await redis.run(() =>
        client.facadeBoundedSet(
          ...keys(name, owner),
          name,
          owner,
          value,
          ttlMs,
          Date.now(),
          since,
          options.boundBytes,
          options.shareBytes ?? options.boundBytes,
          options.entryOverheadBytes,
          options.ownerOverheadBytes ?? 0,
          options.purgePerWrite,
          evictionMinMs,
        ),
      );
      return kept === 1;
    },
    async evictOwner(owner) {
      await redis.run(() =>
        client.facadeBoundedEvict(...keys('', owner), owner, Date.now(), evictionMinMs),
      );
    },
  };
}

/** The owner an entry's name starts with (`<owner>:<rest>`), as the scripts read it. */
function ownerOf(name: string): string {
  const at = name.indexOf(':');
  return at === -1 ? '' : name.slice(0, at);
}
