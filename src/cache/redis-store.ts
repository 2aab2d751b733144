import type { ExecutionResult } from 'graphql';
import type { Result } from 'ioredis';
import type { RedisConnection } from '../redis.js';
import { callerShare } from './heap.js';
import type { CachePolicy } from './policy.js';
import {
  agedAnswer,
  createMemoryResponseStore,
  policyToKeep,
  type ResponseStore,
  sessionOf,
} from './response-store.js';

// The response cache's key space in Redis (docs/caching.md#where-answers-are-kept), under
// REDIS_KEY_PREFIX: one key per answer, `R2 <since> <policy>` then its text; one eviction key per
// session; and the index that counts the bound, changed only by the scripts, with the answers, so
// that it matches Redis. A script drops answers it was not given, so every key shares one hash
// slot (`{response}`): on a Cluster they live on one master.
const PREFIX = '{response}:answer:';
const EVICTED_PREFIX = '{response}:evicted:';
const INDEX_KEYS = [
  '{response}:index:sizes',
  '{response}:index:expiry',
  '{response}:index:bytes',
  '{response}:index:sessions',
  '{response}:index:until',
];
const HEADER = /^R2 (\d+) (\{.*\})$/;

// What used_memory grows by beyond the strings counted, per answer and per session (its count,
// its latest expiry and its eviction key): counted, so that small answers cannot fill a multiple
// of the bound.
const ENTRY_OVERHEAD_BYTES = 300;
const SESSION_OVERHEAD_BYTES = 256;

// Answers purged or evicted per write at most: no script holds Redis for long; an answer that
// needs more room is not kept this time.
const PURGE_PER_WRITE = 100;

// How long an eviction is remembered at least; a read that runs longer is not kept. An eviction
// of a session that kept nothing lives this long, uncounted; one that kept answers, as long as
// they do, counted with the session.
const READ_MS = 60_000;

// KEYS: answer, its session's eviction. Returns [value, ms left, evicted at or ''] or nil.
const GET_SCRIPT = `
local value = redis.call('GET', KEYS[1])
if not value then return false end
return {value, redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]) or ''}
`;

// KEYS: sizes, expiry, bytes, session bytes, session latest expiry, answer, its session's
// eviction. ARGV: name (the answer's key without the prefix), session, value, ttl (ms), now (ms),
// since (ms), bound, share (bytes), overhead per answer and per session (bytes), answers to purge
// or evict at most, how long an eviction is remembered at least (ms). Returns 1 when kept.
const SET_SCRIPT = `
local sizes, expiry, bytes, sessions, untils = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local answer = KEYS[6]
local name, session, value = ARGV[1], ARGV[2], ARGV[3]
local ttl, now, since = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local bound, share = tonumber(ARGV[7]), tonumber(ARGV[8])
local overhead, perSession = tonumber(ARGV[9]), tonumber(ARGV[10])
local evicted = redis.call('GET', KEYS[7])
if evicted and tonumber(evicted) >= since then return 0 end
local prefix = string.sub(answer, 1, #answer - #name)
local evictedPrefix = string.sub(KEYS[7], 1, #KEYS[7] - #session)
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
    redis.call('HDEL', untils, owner)
    total = total - perSession - #owner
    -- Its eviction guarded answers that are gone: it now guards only reads still running.
    local mark = evictedPrefix .. owner
    if redis.call('PTTL', mark) > tonumber(ARGV[12]) then
      redis.call('PEXPIRE', mark, ARGV[12])
    end
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
    if now + ttl > tonumber(redis.call('HGET', untils, session) or '0') then
      redis.call('HSET', untils, session, now + ttl)
    end
    kept = 1
  end
end
if total < 0 then total = 0 end
local longest = math.max(redis.call('PTTL', expiry), ttl)
redis.call('SET', bytes, total, 'PX', longest)
for _, key in ipairs({sizes, expiry, sessions, untils}) do redis.call('PEXPIRE', key, longest) end
return kept
`;

// KEYS: the sessions' latest expiry, the session's eviction. ARGV: session, now (ms), how long to
// remember it at least (ms). The eviction outlives the session's answers kept so far, and no more:
// a session that kept nothing (a refused caller's) leaves a key that expires in a minute.
const EVICT_SCRIPT = `
local now = tonumber(ARGV[2])
local at = now
local before = tonumber(redis.call('GET', KEYS[2]) or '0')
if before > at then at = before end
local latest = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local ttl = math.max(latest - now, tonumber(ARGV[3]), redis.call('PTTL', KEYS[2]))
redis.call('SET', KEYS[2], at, 'PX', ttl)
return 1
`;

// The scripts defineCommand adds, declared as ioredis's example does.
declare module 'ioredis' {
  interface RedisCommander<Context> {
    facadeResponseGet(
      answer: string,
      evicted: string,
    ): Result<[string, number, string] | null, Context>;
    facadeResponseSet(...keysAndArgs: Array<string | number>): Result<number, Context>;
    facadeResponseEvict(
      latest: string,
      evicted: string,
      session: string,
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
 * Answers in Redis, shared by every replica, bounded by `redisBytes`. No script walks what a
 * session kept. Redis failing is never the request's failure: a read or a write falls back to
 * memory, an eviction is left to the answers' expiry.
 */
export function createRedisResponseStore(
  redis: RedisConnection,
  options: { redisBytes: number; memoryBytes: number },
): ResponseStore {
  redis.client.defineCommand('facadeResponseGet', { numberOfKeys: 2, lua: GET_SCRIPT });
  redis.client.defineCommand('facadeResponseSet', { numberOfKeys: 7, lua: SET_SCRIPT });
  redis.client.defineCommand('facadeResponseEvict', { numberOfKeys: 2, lua: EVICT_SCRIPT });
  const memory = createMemoryResponseStore(options.memoryBytes);
  const share = callerShare(options.redisBytes);
  return {
    kind: 'redis',
    empty: false,
    async set(key, answer, since) {
      const policy = policyToKeep(answer);
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
            READ_MS,
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
      // Not written by this version: a miss, replaced when it is kept again.
      if (!kept || (evicted !== '' && Number(evicted) >= kept.since)) return null;
      const { data, extensions } = JSON.parse(kept.text) as ExecutionResult;
      const elapsed = kept.policy.maxAge * 1000 - Number(msLeft);
      return agedAnswer(kept.text, extensions, kept.policy, elapsed, data);
    },
    async evictSession(session) {
      memory.evictSession(session);
      try {
        await redis.run(() =>
          redis.client.facadeResponseEvict(
            INDEX_KEYS[4] as string,
            EVICTED_PREFIX + session,
            session,
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
