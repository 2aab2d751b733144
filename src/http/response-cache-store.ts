// Where the response cache keeps answers: the Cache interface of @envelop/response-cache, bounded
// in bytes in memory, or in Redis on the process's one connection. Every key is
// `<session>:<operation>`, the session a hash of what shapes the answer's upstream calls
// (src/http/use-response-cache.ts), so that a mutation can evict its caller's answers.
import type { Cache } from '@graphql-yoga/plugin-response-cache';
import type { ExecutionResult } from 'graphql';
import type { Redis } from 'ioredis';
import type { Logger } from '../telemetry/logger.js';
import type { CachePolicy } from '../upstream/cache-policy.js';
import { ANSWER_POLICY, type WithPolicy } from './cache-hints.js';

export interface ResponseStore extends Cache {
  readonly kind: 'memory' | 'redis';
  /** Holds nothing for sure (then a lookup is skipped, and with it hashing the key). */
  readonly empty: boolean;
  /** Forgets every answer kept for `session`; never rejects. */
  evictSession(session: string): void | Promise<void>;
}

const sessionOf = (key: string) => key.slice(0, key.indexOf(':'));

/** The policy an answer was kept with, and how long it is kept: the shorter of it and the plugin's. */
function keeping(
  data: ExecutionResult,
  ttl: number,
): { policy: CachePolicy; ms: number } | undefined {
  const policy = (data as WithPolicy)[ANSWER_POLICY];
  if (!policy || policy.maxAge <= 0 || data.errors?.length) return undefined;
  const ms = Math.min(ttl, policy.maxAge * 1000);
  return ms >= 1000 ? { policy, ms } : undefined;
}

/**
 * A kept answer as it is served: the text it was kept as, its extensions and the lifetime it has
 * left. Yoga writes an answer that has a `stringify` with it (called unbound) rather than
 * serialising it again, so its data is parsed from the text only when something reads it.
 * Whatever adds to a kept answer builds a new one without it (src/http/use-response-cache.ts).
 */
class KeptAnswer implements ExecutionResult {
  readonly extensions: ExecutionResult['extensions'];
  readonly [ANSWER_POLICY]: CachePolicy;
  readonly stringify: () => string;
  readonly #text: string;
  #data: ExecutionResult['data'];
  constructor(
    text: string,
    extensions: ExecutionResult['extensions'],
    policy: CachePolicy,
    data?: ExecutionResult['data'],
  ) {
    this.#text = text;
    this.#data = data;
    this.extensions = extensions;
    this[ANSWER_POLICY] = policy;
    this.stringify = () => text;
  }
  get data(): ExecutionResult['data'] {
    this.#data ??= (JSON.parse(this.#text) as ExecutionResult).data;
    return this.#data;
  }
}

/** What a kept answer is served as, with the lifetime it has left (whole seconds), if any. */
function served(
  text: string,
  extensions: ExecutionResult['extensions'],
  scope: CachePolicy['scope'],
  msLeft: number,
  data?: ExecutionResult['data'],
): ExecutionResult | null {
  const maxAge = Math.floor(msLeft / 1000);
  return maxAge < 1 ? null : new KeptAnswer(text, extensions, { maxAge, scope }, data);
}

interface Entry {
  text: string;
  /** A copy of the answer's extensions, which Yoga reads on every answer it writes. */
  extensions: ExecutionResult['extensions'];
  scope: CachePolicy['scope'];
  expiresAt: number;
  bytes: number;
}

/**
 * Answers in this process's memory, least recently used out first, bounded by their JSON length
 * (with their keys): the plugin's own in-memory cache (lru-cache) is bounded by count, and one
 * answer may be a few hundred bytes or several megabytes, so a count bounds nothing. A kept answer
 * is its JSON text, taken when it is kept and never changed; each hit is served from it.
 *
 * The plugin's invalidation by type and id has nothing to find here: no mutation returns a type a
 * query does. A mutation evicts its caller's answers instead (evictSession).
 */
export function createMemoryResponseStore(maxBytes: number): ResponseStore {
  const entries = new Map<string, Entry>();
  const sessions = new Map<string, Set<string>>();
  let size = 0;
  const drop = (key: string) => {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    size -= entry.bytes;
    const session = sessionOf(key);
    const keys = sessions.get(session);
    keys?.delete(key);
    if (keys?.size === 0) sessions.delete(session);
  };
  return {
    kind: 'memory',
    get empty() {
      return entries.size === 0;
    },
    set(key, data, _entities, ttl) {
      const kept = keeping(data, ttl);
      if (!kept) return;
      const json = JSON.stringify(data);
      const bytes = key.length + json.length;
      drop(key);
      if (bytes > maxBytes) return;
      entries.set(key, {
        text: json,
        extensions:
          data.extensions &&
          (JSON.parse(JSON.stringify(data.extensions)) as typeof data.extensions),
        scope: kept.policy.scope,
        expiresAt: Date.now() + kept.ms,
        bytes,
      });
      size += bytes;
      const session = sessionOf(key);
      let keys = sessions.get(session);
      if (!keys) {
        keys = new Set();
        sessions.set(session, keys);
      }
      keys.add(key);
      for (const oldest of entries.keys()) {
        if (size <= maxBytes) break;
        drop(oldest);
      }
    },
    get(key) {
      const entry = entries.get(key);
      if (!entry) return null;
      const answer = served(
        entry.text,
        entry.extensions,
        entry.scope,
        entry.expiresAt - Date.now(),
      );
      if (!answer) {
        drop(key);
        return null;
      }
      entries.delete(key);
      entries.set(key, entry);
      return answer;
    },
    invalidate() {},
    evictSession(session) {
      for (const key of sessions.get(session) ?? []) drop(key);
    },
  };
}

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
 * Redis failing is never the request's failure, as for APQ: a read that fails is a miss (then the
 * memory kept meanwhile), a write that fails is kept in memory, an eviction that fails is retried
 * by the entries' own expiry; one warning when Redis starts failing, one line when it answers
 * again.
 */
export function createRedisResponseStore(
  redis: Redis,
  options: { redisBytes: number; memoryBytes: number; logger?: Logger | undefined },
): ResponseStore {
  redis.defineCommand('facadeResponseGet', { numberOfKeys: 1, lua: GET_SCRIPT });
  redis.defineCommand('facadeResponseSet', { numberOfKeys: 5, lua: SET_SCRIPT });
  redis.defineCommand('facadeResponseEvict', { numberOfKeys: 4, lua: EVICT_SCRIPT });
  const commands = redis as unknown as ResponseCommands;
  const memory = createMemoryResponseStore(options.memoryBytes);
  let failing = false;
  const warn = (error: unknown) => {
    if (!failing)
      options.logger?.warn({ err: error }, 'Response cache (Redis) failing; memory only');
    failing = true;
  };
  const recovered = () => {
    if (failing) options.logger?.info('Response cache (Redis) answering again');
    failing = false;
  };
  return {
    kind: 'redis',
    empty: false,
    async set(key, data, entities, ttl) {
      const kept = keeping(data, ttl);
      if (!kept) return;
      try {
        const value = `${kept.policy.scope}\n${JSON.stringify(data)}`;
        await commands.facadeResponseSet(
          ...BOUND_KEYS,
          PREFIX + key,
          SESSION_PREFIX + sessionOf(key),
          value,
          kept.ms,
          Date.now(),
          options.redisBytes,
          ENTRY_OVERHEAD_BYTES,
          PURGE_PER_WRITE,
        );
        recovered();
      } catch (error) {
        warn(error);
        memory.set(key, data, entities, ttl);
      }
    },
    async get(key) {
      try {
        const found = await commands.facadeResponseGet(PREFIX + key);
        recovered();
        if (!found) return null;
        const [value, msLeft] = found;
        const newline = value.indexOf('\n');
        const scope = value.slice(0, newline);
        // Anything else was not written by this version: a miss, replaced when it is kept again.
        if (scope !== 'PUBLIC' && scope !== 'PRIVATE') return null;
        const text = value.slice(newline + 1);
        const { data, extensions } = JSON.parse(text) as ExecutionResult;
        return served(text, extensions, scope, Number(msLeft), data);
      } catch (error) {
        warn(error);
        return memory.get(key);
      }
    },
    invalidate() {},
    async evictSession(session) {
      memory.evictSession(session);
      try {
        await commands.facadeResponseEvict(...BOUND_KEYS, SESSION_PREFIX + session);
        recovered();
      } catch (error) {
        warn(error);
      }
    },
  };
}
