import { createHash, randomUUID } from 'node:crypto';
import type { Result } from 'ioredis';
import { callerShare } from '../cache/heap.js';
import type { RedisConnection } from '../redis.js';
import { type CachePolicy, staleWindow } from '../upstream/cache-policy.js';
import type { RepositoryList } from '../upstream/repository-list.js';
import { type CallerInputs, listKey } from './ranges.js';

// The kept ranges' second tier, in Redis, shared by every worker and replica
// (docs/caching.md#ranges). Under REDIS_KEY_PREFIX, which ioredis adds: one key per kept range,
// `{ranges}:e:<caller>:<start>:<end>`, living as long as its max-age and stale windows; per caller
// the ranges it kept (a sorted set by start) and the mark of its last mutation; and the index that
// counts the bound, changed only by the scripts. A script drops ranges it was not given, so every
// key shares one hash slot (`{ranges}`): on a Cluster they live on one master.
const ROOT = '{ranges}:';
const INDEX_KEYS = [`${ROOT}index:sizes`, `${ROOT}index:expiry`, `${ROOT}index:bytes`];
const CALLERS_KEY = `${ROOT}index:callers`;
const MARKS_KEY = `${ROOT}index:marks`;

// What used_memory grows by beyond the strings counted, per range: counted, so that small ranges
// cannot fill a multiple of the bound.
const ENTRY_OVERHEAD_BYTES = 300;
// And per caller: its sorted set of ranges and its count.
const CALLER_OVERHEAD_BYTES = 400;
// Ranges dropped per write at most: no script holds Redis for long.
const DROPS_PER_WRITE = 100;
// Kept ranges a look-up reads at most per range asked, the latest-starting first.
const CANDIDATES = 16;
// How long a mutation's mark lives: longer than a read runs, so that a read in flight across it is
// not kept; its going is a change of mark too, which only drops what a process kept.
const MARK_MS = 60_000;

// Drops a kept range (or a mark) from the index and from its caller's ranges; `prefix` is ROOT as
// ioredis prefixed it. Shared by the scripts that change the index.
const DROP = `
local function drop(gone)
  local size = tonumber(redis.call('HGET', sizes, gone) or '0')
  redis.call('HDEL', sizes, gone)
  redis.call('ZREM', expiry, gone)
  redis.call('ZREM', marks, gone)
  total = total - size
  local owner = string.match(gone, '^e:([^:]+):')
  if owner then
    redis.call('DEL', prefix .. gone)
    redis.call('ZREM', prefix .. 'list:' .. owner, gone)
    if redis.call('HINCRBY', callers, owner, -size) <= 0 then
      redis.call('HDEL', callers, owner)
      total = total - perCaller - #owner
    end
  end
end
local function purge(now, room)
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, room)) do
    drop(gone)
  end
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', marks, '-inf', now, 'LIMIT', 0, room)) do
    drop(gone)
  end
end
local function save(longest)
  if total < 0 then total = 0 end
  longest = math.max(redis.call('PTTL', expiry), redis.call('PTTL', marks), longest)
  redis.call('SET', bytes, total, 'PX', longest)
  for _, key in ipairs({sizes, expiry, callers, marks}) do redis.call('PEXPIRE', key, longest) end
end
`;
const INDEX = `
local sizes, expiry, bytes, callers, marks = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local list, mark, prefix = KEYS[6], KEYS[7], KEYS[8]
local total = tonumber(redis.call('GET', bytes) or '0')
local perCaller = ${CALLER_OVERHEAD_BYTES}
`;

// KEYS: the caller's ranges, its mark, ROOT. ARGV: candidates, then start and end of each range
// asked. Returns the mark ('' for none), then the kept ranges that overlap any range asked.
const READ_SCRIPT = `
local list, prefix = KEYS[1], KEYS[3]
local out = {redis.call('GET', KEYS[2]) or ''}
local seen = {}
for i = 2, #ARGV, 2 do
  local from, to = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  for _, member in ipairs(redis.call('ZREVRANGEBYSCORE', list, '(' .. to, '-inf', 'LIMIT', 0, ARGV[1])) do
    local last = string.match(member, ':([^:]+)$')
    if not seen[member] and (last == 'inf' or tonumber(last) > from) then
      seen[member] = true
      local value = redis.call('GET', prefix .. member)
      if value then out[#out + 1] = value else redis.call('ZREM', list, member) end
    end
  end
end
return out
`;

// ARGV: member, caller, value, ttl (ms), now (ms), start, end ('inf' past total), the mark the
// read saw, bound, share, overhead per range, drops at most. Returns 1 when kept.
const KEEP_SCRIPT = `${INDEX}${DROP}
local member, caller, value = ARGV[1], ARGV[2], ARGV[3]
local ttl, now, start = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local stop = ARGV[7] == 'inf' and math.huge or tonumber(ARGV[7])
local bound, share, overhead, room = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
-- A mutation since the read began, or its mark gone: what the read brought may predate it.
if (redis.call('GET', mark) or '') ~= ARGV[8] then return 0 end
purge(now, room)
-- The caller's ranges this one covers are replaced by it.
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', list, start, '+inf', 'LIMIT', 0, room)) do
  local last = string.match(gone, ':([^:]+)$')
  local ends = last == 'inf' and math.huge or tonumber(last)
  if ends <= stop then drop(gone) end
end
if redis.call('HEXISTS', sizes, member) == 1 then drop(member) end
local size = #value + 4 * #member + overhead
-- What keeping it adds at most: its caller's count may be new.
local adds = size + perCaller + #caller
local kept = 0
if tonumber(redis.call('HGET', callers, caller) or '0') + adds <= share then
  while total + adds > bound and room > 0 do
    local soonest = redis.call('ZRANGE', expiry, 0, 0)[1]
    if not soonest then break end
    drop(soonest)
    room = room - 1
  end
  if total + adds <= bound then
    redis.call('SET', prefix .. member, value, 'PX', ttl)
    redis.call('HSET', sizes, member, size)
    redis.call('ZADD', expiry, now + ttl, member)
    redis.call('ZADD', list, start, member)
    redis.call('PEXPIRE', list, math.max(redis.call('PTTL', list), ttl))
    if redis.call('HINCRBY', callers, caller, size) == size then
      total = total + perCaller + #caller
    end
    total = total + size
    kept = 1
  end
end
save(ttl)
return kept
`;

// ARGV: caller, mark, its lifetime (ms), now (ms), drops at most. The mark is counted in the bound
// and never dropped to make room: only its lifetime ends it.
const EVICT_SCRIPT = `${INDEX}${DROP}
local caller, token, life, now, room = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
purge(now, room)
for _, gone in ipairs(redis.call('ZRANGE', list, 0, room - 1)) do drop(gone) end
-- Any left past the drops are unreachable now; their own lifetimes end them.
redis.call('DEL', list)
local name = 'm:' .. caller
if redis.call('HEXISTS', sizes, name) == 0 then
  local size = #name + #token + 200
  redis.call('HSET', sizes, name, size)
  total = total + size
end
redis.call('ZADD', marks, now + life, name)
redis.call('SET', mark, token, 'PX', life)
save(life)
return 1
`;

// KEYS: the lease. ARGV: its holder, its lifetime (ms). Returns 1 to the one caller that takes it.
const LEASE_SCRIPT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`;

// KEYS: the lease. ARGV: its holder. Ends it, unless it has gone to another since.
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    facadeRangesRead(...keysAndArgs: Array<string | number>): Result<string[], Context>;
    facadeRangesKeep(...keysAndArgs: Array<string | number>): Result<number, Context>;
    facadeRangesEvict(...keysAndArgs: Array<string | number>): Result<number, Context>;
    facadeRangesLease(lease: string, holder: string, ms: number): Result<number, Context>;
    facadeRangesRelease(lease: string, holder: string): Result<number, Context>;
  }
}

/** A range one process kept, as every process reads it back. */
export interface SharedRange {
  covering: RepositoryList;
  start: number;
  policy: CachePolicy;
  since: number;
}

/** What a look-up found: the caller's mark (`''` for none) and the ranges that overlap. */
export interface SharedRead {
  mark: string;
  ranges: SharedRange[];
}

/**
 * The kept ranges every process shares, per caller, bounded by `redisBytes`. Redis failing is never
 * the request's failure: a read rejects (the caller goes on without), a write is lost.
 */
export interface SharedRanges {
  /** The caller's mark, and its kept ranges that overlap each [start, end) asked. */
  read(
    call: CallerInputs,
    ranges: ReadonlyArray<{ start: number; end: number }>,
  ): Promise<SharedRead>;
  /** Keeps a range, unless the caller's mark is no longer `mark` (a mutation since the read began). */
  keep(range: SharedRange & { call: CallerInputs; mark: string }): Promise<boolean>;
  /** Forgets every range of the caller, for every process: a new mark. */
  evictCaller(call: CallerInputs): Promise<void>;
  /**
   * For the one process that may refresh [start, end), at most for the next `ms`: the end of its
   * lease, to call once it has refreshed. Undefined for the others.
   */
  lease(
    call: CallerInputs,
    start: number,
    end: number,
    ms: number,
  ): Promise<(() => Promise<void>) | undefined>;
}

/** The caller's part of every key: a digest, so that no credential is written to Redis. */
const callerId = (call: CallerInputs) =>
  createHash('sha256').update(listKey(call)).digest('base64url').slice(0, 32);

const keysOf = (caller: string) => [
  ...INDEX_KEYS,
  CALLERS_KEY,
  MARKS_KEY,
  `${ROOT}list:${caller}`,
  `${ROOT}mark:${caller}`,
  ROOT,
];

function parseRange(value: string): SharedRange | undefined {
  try {
    const { s, a, p, c } = JSON.parse(value) as {
      s: number;
      a: number;
      p: CachePolicy;
      c: RepositoryList;
    };
    if (typeof s !== 'number' || typeof a !== 'number' || !p || !Array.isArray(c?.repositories))
      return undefined;
    return { start: s, since: a, policy: p, covering: c };
  } catch {
    return undefined;
  }
}

/** Writes one kept range for every process; false when it is not kept. */
async function keepRange(
  redis: RedisConnection,
  bound: number,
  share: number,
  {
    call,
    covering,
    start,
    policy,
    since,
    mark,
  }: SharedRange & { call: CallerInputs; mark: string },
): Promise<boolean> {
  const { total, repositories } = covering;
  const reached = start + repositories.length >= total;
  const lifetime = (policy.maxAge + staleWindow(policy)) * 1000 - (Date.now() - since);
  // A range of no items short of `total` says nothing another process could use.
  if (bound <= 0 || lifetime < 1 || (!reached && repositories.length === 0)) return false;
  const caller = callerId(call);
  const end = reached ? 'inf' : String(start + repositories.length);
  const member = `e:${caller}:${start}:${end}`;
  const value = JSON.stringify({ s: start, a: since, p: policy, c: covering });
  const kept = await redis.run(() =>
    redis.client.facadeRangesKeep(
      ...keysOf(caller),
      member,
      caller,
      value,
      Math.ceil(lifetime),
      Date.now(),
      start,
      end,
      mark,
      bound,
      share,
      ENTRY_OVERHEAD_BYTES,
      DROPS_PER_WRITE,
    ),
  );
  return kept === 1;
}

export function createRedisRanges(
  redis: RedisConnection,
  options: { redisBytes: number },
): SharedRanges {
  redis.client.defineCommand('facadeRangesRead', { numberOfKeys: 3, lua: READ_SCRIPT });
  redis.client.defineCommand('facadeRangesKeep', { numberOfKeys: 8, lua: KEEP_SCRIPT });
  redis.client.defineCommand('facadeRangesEvict', { numberOfKeys: 8, lua: EVICT_SCRIPT });
  redis.client.defineCommand('facadeRangesLease', { numberOfKeys: 1, lua: LEASE_SCRIPT });
  redis.client.defineCommand('facadeRangesRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  const share = callerShare(options.redisBytes);
  return {
    async read(call, ranges) {
      const caller = callerId(call);
      const bounds = ranges.flatMap(({ start, end }) => [start, end]);
      const [mark = '', ...values] = await redis.run(() =>
        redis.client.facadeRangesRead(
          `${ROOT}list:${caller}`,
          `${ROOT}mark:${caller}`,
          ROOT,
          CANDIDATES,
          ...bounds,
        ),
      );
      const found: SharedRange[] = [];
      for (const value of values) {
        const range = parseRange(value);
        if (range) found.push(range);
      }
      return { mark, ranges: found };
    },
    keep: (range) => keepRange(redis, options.redisBytes, share, range),
    async evictCaller(call) {
      const caller = callerId(call);
      await redis.run(() =>
        redis.client.facadeRangesEvict(
          ...keysOf(caller),
          caller,
          randomUUID(),
          MARK_MS,
          Date.now(),
          DROPS_PER_WRITE,
        ),
      );
    },
    async lease(call, start, end, ms) {
      const key = `${ROOT}lease:${callerId(call)}:${start}:${end}`;
      const holder = randomUUID();
      const taken = await redis.run(() => redis.client.facadeRangesLease(key, holder, ms));
      if (taken !== 1) return undefined;
      return async () => {
        await redis.run(() => redis.client.facadeRangesRelease(key, holder)).catch(() => {});
      };
    },
  };
}
