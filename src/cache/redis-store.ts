import type { ExecutionResult } from 'graphql';
import type { Result } from 'ioredis';
import type { RedisConnection } from '../redis.js';
import { callerShare } from './heap.js';
import type { CachePolicy } from './policy.js';
import {
  createMemoryResponseStore,
  keeping,
  type ResponseStore,
  served,
  sessionOf,
} from './response-store.js';

// The response cache's key space in Redis. Each answer is one key, `SET … PX` its max-age, its
// value a header line (the version, when its execution began, its policy) and its text. A
// mutation's eviction is one key per session, the time it happened, outliving every answer kept
// before it: an answer whose execution began at or before it is a miss. The bound's count is an
// index of the answers (their sizes, and their expiry in a sorted set) and each session's bytes;
// one script changes them with the answers, so that the count matches what Redis holds.
const PREFIX = 'graphql-facade:response:';
const EVICTED_PREFIX = 'graphql-facade:response-evicted:';
const INDEX_KEYS = [
  'graphql-facade:response-index:sizes',
  'graphql-facade:response-index:expiry',
  'graphql-facade:response-index:bytes',
  'graphql-facade:response-index:sessions',
];
const HEADER = /^R2 (\d+) (\{.*\})$/;

// What Redis spends on an answer beyond its text, its key and the index's two copies of its name
// (the keys' and the index's allocations, the expiry), and on a session's count beyond its name,
// as INFO memory's used_memory grows: counted too, so that small answers cannot fill a multiple
// of the bound.
const ENTRY_OVERHEAD_BYTES = 300;
const SESSION_OVERHEAD_BYTES = 64;

// Expired answers taken out of the count per write, and answers evicted for room: enough to keep
// up with any rate of writes, few enough that one script never holds Redis for long. An answer
// that needs more room than that is not kept this time.
const PURGE_PER_WRITE = 100;

// How long an eviction is remembered at least: longer than a read runs. A read that runs longer is
// not kept, since an eviction during it may be forgotten already.
const READ_MS = 60_000;

// KEYS: answer, its session's eviction. Returns [value, ms left, evicted at or ''] or nil.
const GET_SCRIPT = `
local value = redis.call('GET', KEYS[1])
if not value then return false end
return {value, redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]) or ''}
`;

// KEYS: sizes, expiry, bytes, session bytes, answer, its session's eviction. ARGV: name (the
// answer's key without the prefix), session, value, ttl (ms), now (ms), since (ms), bound, share
// (bytes), overhead per answer and per session (bytes), answers to purge or evict at most.
// Returns 1 when kept.
const SET_SCRIPT = `
local sizes, expiry, bytes, sessions, answer = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local name, session, value = ARGV[1], ARGV[2], ARGV[3]
local ttl, now, since = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local bound, share = tonumber(ARGV[7]), tonumber(ARGV[8])
local overhead, perSession = tonumber(ARGV[9]), tonumber(ARGV[10])
local evicted = redis.call('GET', KEYS[6])
if evicted and tonumber(evicted) >= since then return 0 end
local prefix = string.sub(answer, 1, #answer - #name)
local total = tonumber(redis.call('GET', bytes) or '0')
local function drop(gone)
  local size = tonumber(redis.call('HGET', sizes, gone) or '0')
  redis.call('HDEL', sizes, gone)
  redis.call('ZREM', expiry, gone)
  redis.call('DEL', prefix .. gone)
  total = total - size
  local owner = string.sub(gone, 1, (string.find(gone, ':', 1, true) or 1) - 1)
  if redis.call('HINCRBY', sessions, owner, -size) <= 0 then
    redis.call('HDEL', sessions, owner)
    total = total - perSession - #owner
  end
end
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, ARGV[11])) do
  drop(gone)
end
if redis.call('HEXISTS', sizes, name) == 1 then drop(name) end
local size = #value + #answer + 2 * #name + overhead
-- What keeping it adds at most: its session's count may be new.
local adds = size + perSession + #session
local kept = 0
local room = tonumber(ARGV[11])
if tonumber(redis.call('HGET', sessions, session) or '0') + adds <= share then
  while total + adds > bound and room > 0 do
    local soonest = redis.call('ZRANGE', expiry, 0, 0)[1]
    if not soonest then
      -- Nothing indexed is left to count (keys lost outside this script): start again empty.
      redis.call('DEL', sizes, sessions)
      total = 0
      break
    end
    drop(soonest)
    room = room - 1
  end
  if total + adds <= bound then
    redis.call('SET', answer, value, 'PX', ttl)
    redis.call('HSET', sizes, name, size)
    redis.call('ZADD', expiry, now + ttl, name)
    total = total + size
    if redis.call('HINCRBY', sessions, session, size) == size then
      total = total + perSession + #session
    end
    kept = 1
  end
end
if total < 0 then total = 0 end
local longest = math.max(redis.call('PTTL', expiry), ttl)
redis.call('SET', bytes, total, 'PX', longest)
for _, key in ipairs({sizes, expiry, sessions}) do redis.call('PEXPIRE', key, longest) end
return kept
`;

// KEYS: expiry, the session's eviction. ARGV: now (ms), how long to remember it at least (ms).
// The eviction outlives every answer kept so far, the longest-lived of which the index's expiry
// says.
const EVICT_SCRIPT = `
local at = tonumber(ARGV[1])
local before = tonumber(redis.call('GET', KEYS[2]) or '0')
if before > at then at = before end
local ttl = math.max(redis.call('PTTL', KEYS[1]), tonumber(ARGV[2]))
redis.call('SET', KEYS[2], at, 'PX', ttl)
return 1
`;

// The scripts defineCommand adds to the client, declared to TypeScript as ioredis's example does.
declare module 'ioredis' {
  interface RedisCommander<Context> {
    facadeResponseGet(
      answer: string,
      evicted: string,
    ): Result<[string, number, string] | null, Context>;
    facadeResponseSet(...keysAndArgs: Array<string | number>): Result<number, Context>;
    facadeResponseEvict(
      expiry: string,
      evicted: string,
      ...args: number[]
    ): Result<number, Context>;
  }
}

/** The answer's header and text, or undefined for a value this version did not write. */
function parse(value: string): { since: number; policy: CachePolicy; text: string } | undefined {
  const newline = value.indexOf('\n');
  const header = HEADER.exec(value.slice(0, newline));
  if (newline === -1 || !header) return undefined;
  try {
    const policy = JSON.parse(header[2] as string) as CachePolicy;
    if (policy.scope !== 'PUBLIC' && policy.scope !== 'PRIVATE') return undefined;
    return { since: Number(header[1]), policy, text: value.slice(newline + 1) };
  } catch {
    return undefined;
  }
}

/**
 * Answers in Redis, shared by every replica, on the process's one connection (src/redis.ts). Each
 * answer expires with its own lifetime, and the response cache's own key space is bounded by
 * `redisBytes` as Redis's memory grows, the soonest to expire out first, one session to a share
 * of it: a flood of distinct queries can only evict kept answers, never crowd out the rate limit's
 * counters or APQ on the same Redis. No script walks what a caller kept: a mutation's eviction is
 * one key, and the count is kept up by a bounded purge on each write.
 * Redis failing or slow is never the request's failure: a read that fails or times out is a miss
 * (then the memory kept meanwhile), a write that fails is kept in memory, an eviction that fails
 * leaves the answers to their expiry.
 */
export function createRedisResponseStore(
  redis: RedisConnection,
  options: { redisBytes: number; memoryBytes: number },
): ResponseStore {
  redis.client.defineCommand('facadeResponseGet', { numberOfKeys: 2, lua: GET_SCRIPT });
  redis.client.defineCommand('facadeResponseSet', { numberOfKeys: 6, lua: SET_SCRIPT });
  redis.client.defineCommand('facadeResponseEvict', { numberOfKeys: 2, lua: EVICT_SCRIPT });
  const memory = createMemoryResponseStore(options.memoryBytes);
  const share = callerShare(options.redisBytes);
  return {
    kind: 'redis',
    empty: false,
    async set(key, answer, since) {
      const policy = keeping(answer);
      if (!policy || Date.now() - since > READ_MS) return;
      const session = sessionOf(key);
      const value = `R2 ${since} ${JSON.stringify(policy)}\n${JSON.stringify(answer.result)}`;
      try {
        await redis.run(() =>
          redis.client.facadeResponseSet(
            ...INDEX_KEYS,
            PREFIX + key,
            EVICTED_PREFIX + session,
            key,
            session,
            value,
            policy.maxAge * 1000,
            Date.now(),
            since,
            options.redisBytes,
            share,
            ENTRY_OVERHEAD_BYTES,
            SESSION_OVERHEAD_BYTES,
            PURGE_PER_WRITE,
          ),
        );
      } catch {
        memory.set(key, answer, since);
      }
    },
    async get(key) {
      let found: [string, number, string] | null;
      try {
        found = await redis.run(() =>
          redis.client.facadeResponseGet(PREFIX + key, EVICTED_PREFIX + sessionOf(key)),
        );
      } catch {
        return memory.get(key);
      }
      if (!found) return null;
      const [value, msLeft, evicted] = found;
      const kept = parse(value);
      // Anything else was not written by this version: a miss, replaced when it is kept again.
      if (!kept || (evicted !== '' && Number(evicted) >= kept.since)) return null;
      const { data, extensions } = JSON.parse(kept.text) as ExecutionResult;
      const elapsed = kept.policy.maxAge * 1000 - Number(msLeft);
      return served(kept.text, extensions, kept.policy, elapsed, data);
    },
    async evictSession(session) {
      memory.evictSession(session);
      try {
        await redis.run(() =>
          redis.client.facadeResponseEvict(
            INDEX_KEYS[1] as string,
            EVICTED_PREFIX + session,
            Date.now(),
            READ_MS,
          ),
        );
      } catch {
        // Left to the answers' own expiry.
      }
    },
  };
}
