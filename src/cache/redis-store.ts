import type { ExecutionResult } from 'graphql';
import type { RedisConnection } from '../redis.js';
import {
  createMemoryResponseStore,
  keeping,
  type ResponseStore,
  served,
  sessionOf,
} from './response-store.js';

// The response cache's key space in Redis: one key per answer (its scope, a newline, its JSON),
// expiring with it; per session the set of its answers' keys, which lives as long as the longest
// of them; and, for the bound, each answer's size, its expiry (a sorted set, in ms) and the bytes
// they count. They change together, in one script, so that the count always matches the answers
// it counts, whichever replica writes.
const PREFIX = 'graphql-facade:response:';
const SESSION_PREFIX = 'graphql-facade:response-session:';
const BOUND_KEYS = [
  'graphql-facade:response-sizes',
  'graphql-facade:response-expiry',
  'graphql-facade:response-bytes',
];

// What Redis spends on an answer beyond its text (its key kept three times, the expiry, the
// allocations), as for APQ's entries: counted too, so that small answers cannot fill several times
// the bound.
const ENTRY_OVERHEAD_BYTES = 256;

// Expired answers taken out of the count per write: enough to keep up with any rate of writes, few
// enough that one script never holds Redis for long.
const PURGE_PER_WRITE = 100;

// KEYS: answer. Returns [value, ms left] or nil.
const GET_SCRIPT = `
local value = redis.call('GET', KEYS[1])
if not value then return false end
return {value, redis.call('PTTL', KEYS[1])}
`;

// Shared by the two scripts that change the count: `drop` forgets one answer.
const COUNTED = `
local sizes, expiry, bytes = KEYS[1], KEYS[2], KEYS[3]
local total = tonumber(redis.call('GET', bytes) or '0')
local function drop(name)
  total = total - tonumber(redis.call('HGET', sizes, name) or '0')
  redis.call('HDEL', sizes, name)
  redis.call('ZREM', expiry, name)
  redis.call('DEL', name)
end
`;

// KEYS: sizes, expiry, bytes, answer, session. ARGV: value, ttl (ms), now (ms), bound (bytes),
// overhead (bytes), expired answers to purge at most.
const SET_SCRIPT = `${COUNTED}
local answer, session = KEYS[4], KEYS[5]
local ttl, now, bound = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
for _, name in ipairs(redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, ARGV[6])) do
  drop(name)
end
if redis.call('HEXISTS', sizes, answer) == 1 then drop(answer) end
local size = #ARGV[1] + #answer + tonumber(ARGV[5])
local kept = 0
if size <= bound then
  while total + size > bound do
    local soonest = redis.call('ZRANGE', expiry, 0, 0)[1]
    if not soonest then
      -- Nothing indexed is left to count (a key lost outside this script): start again empty.
      redis.call('DEL', sizes)
      total = 0
      break
    end
    drop(soonest)
  end
  redis.call('SET', answer, ARGV[1], 'PX', ttl)
  redis.call('HSET', sizes, answer, size)
  redis.call('ZADD', expiry, now + ttl, answer)
  redis.call('SADD', session, answer)
  if redis.call('PTTL', session) < ttl then redis.call('PEXPIRE', session, ttl) end
  total = total + size
  kept = 1
end
if total < 0 then total = 0 end
redis.call('SET', bytes, total)
return kept
`;

// KEYS: sizes, expiry, bytes, session.
const EVICT_SCRIPT = `${COUNTED}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[4])) do drop(name) end
redis.call('DEL', KEYS[4])
if total < 0 then total = 0 end
redis.call('SET', bytes, total)
return 1
`;

interface ResponseCommands {
  facadeResponseGet(key: string): Promise<[string, number] | null>;
  facadeResponseSet(...keysAndArgs: Array<string | number>): Promise<number>;
  facadeResponseEvict(...keys: string[]): Promise<number>;
}

/**
 * Answers in Redis, shared by every replica, on the process's one connection (src/redis.ts). Each
 * answer expires with its own lifetime, so Redis holds no answer longer than its policy allows,
 * and the response cache's own key space is bounded by `redisBytes` (answers, keys and an
 * allowance per answer), the soonest to expire out first: a flood of distinct queries can only
 * evict kept answers, never crowd out the rate limit's counters or APQ on the same Redis.
 * Redis failing or slow is never the request's failure, as for APQ: a read that fails or times out
 * is a miss (then the memory kept meanwhile), a write that fails is kept in memory, an eviction
 * that fails is retried by the entries' own expiry.
 */
export function createRedisResponseStore(
  redis: RedisConnection,
  options: { redisBytes: number; memoryBytes: number },
): ResponseStore {
  redis.client.defineCommand('facadeResponseGet', { numberOfKeys: 1, lua: GET_SCRIPT });
  redis.client.defineCommand('facadeResponseSet', { numberOfKeys: 5, lua: SET_SCRIPT });
  redis.client.defineCommand('facadeResponseEvict', { numberOfKeys: 4, lua: EVICT_SCRIPT });
  const commands = redis.client as unknown as ResponseCommands;
  const memory = createMemoryResponseStore(options.memoryBytes);
  return {
    kind: 'redis',
    empty: false,
    async set(key, data, since) {
      const policy = keeping(data);
      if (!policy) return;
      const ms = policy.maxAge * 1000;
      try {
        const value = `${policy.scope}\n${JSON.stringify(data)}`;
        await redis.run(() =>
          commands.facadeResponseSet(
            ...BOUND_KEYS,
            PREFIX + key,
            SESSION_PREFIX + sessionOf(key),
            value,
            ms,
            Date.now(),
            options.redisBytes,
            ENTRY_OVERHEAD_BYTES,
            PURGE_PER_WRITE,
          ),
        );
      } catch {
        memory.set(key, data, since);
      }
    },
    async get(key) {
      try {
        const found = await redis.run(() => commands.facadeResponseGet(PREFIX + key));
        if (!found) return null;
        const [value, msLeft] = found;
        const newline = value.indexOf('\n');
        const scope = value.slice(0, newline);
        // Anything else was not written by this version: a miss, replaced when it is kept again.
        if (scope !== 'PUBLIC' && scope !== 'PRIVATE') return null;
        const text = value.slice(newline + 1);
        const { data, extensions } = JSON.parse(text) as ExecutionResult;
        return served(text, extensions, { maxAge: Number(msLeft) / 1000, scope }, 0, data);
      } catch {
        return memory.get(key);
      }
    },
    async evictSession(session) {
      memory.evictSession(session);
      try {
        await redis.run(() =>
          commands.facadeResponseEvict(...BOUND_KEYS, SESSION_PREFIX + session),
        );
      } catch {
        // Left to the answers' own expiry.
      }
    },
  };
}
