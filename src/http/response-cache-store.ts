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

/** What a kept answer is served as: its data, with the lifetime it has left (whole seconds). */
function served(result: ExecutionResult, scope: CachePolicy['scope'], msLeft: number) {
  const maxAge = Math.floor(msLeft / 1000);
  if (maxAge < 1) return null;
  return { ...result, [ANSWER_POLICY]: { maxAge, scope } } as ExecutionResult;
}

interface Entry {
  result: ExecutionResult;
  scope: CachePolicy['scope'];
  expiresAt: number;
  bytes: number;
}

/**
 * Answers in this process's memory, least recently used out first, bounded by their JSON length
 * (with their keys): the plugin's own in-memory cache (lru-cache) is bounded by count, and one
 * answer may be a few hundred bytes or several megabytes, so a count bounds nothing. A kept answer
 * is a copy made when it is kept and is never changed: a hit hands out the same object, which the
 * plugin spreads before anything adds to it.
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
    set(key, data, _entities, ttl) {
      const kept = keeping(data, ttl);
      if (!kept) return;
      const json = JSON.stringify(data);
      const bytes = key.length + json.length;
      drop(key);
      if (bytes > maxBytes) return;
      entries.set(key, {
        result: JSON.parse(json) as ExecutionResult,
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
      const answer = served(entry.result, entry.scope, entry.expiresAt - Date.now());
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

// The response cache's key space in Redis: one key per answer, expiring with it, and per session
// the set of its answers' keys, which lives as long as the longest of them.
const PREFIX = 'graphql-facade:response:';
const SESSION_PREFIX = 'graphql-facade:response-session:';

// KEYS: answer. Returns [value, ms left] or nil.
const GET_SCRIPT = `
local value = redis.call('GET', KEYS[1])
if not value then return false end
return {value, redis.call('PTTL', KEYS[1])}
`;

// KEYS: answer, session. ARGV: value, ttl (ms).
const SET_SCRIPT = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SADD', KEYS[2], KEYS[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
return 1
`;

// KEYS: session.
const EVICT_SCRIPT = `
for _, key in ipairs(redis.call('SMEMBERS', KEYS[1])) do redis.call('DEL', key) end
redis.call('DEL', KEYS[1])
return 1
`;

interface ResponseCommands {
  facadeResponseGet(key: string): Promise<[string, number] | null>;
  facadeResponseSet(key: string, session: string, value: string, ttl: number): Promise<number>;
  facadeResponseEvict(session: string): Promise<number>;
}

/**
 * Answers in Redis, shared by every replica, on the process's one connection (src/redis.ts). Each
 * answer expires with its own lifetime, so Redis holds no answer longer than its policy allows.
 * Redis failing is never the request's failure, as for APQ: a read that fails is a miss (then the
 * memory kept meanwhile), a write that fails is kept in memory, an eviction that fails is retried
 * by the entries' own expiry; one warning when Redis starts failing, one line when it answers
 * again.
 */
export function createRedisResponseStore(
  redis: Redis,
  options: { memoryBytes: number; logger?: Logger | undefined },
): ResponseStore {
  redis.defineCommand('facadeResponseGet', { numberOfKeys: 1, lua: GET_SCRIPT });
  redis.defineCommand('facadeResponseSet', { numberOfKeys: 2, lua: SET_SCRIPT });
  redis.defineCommand('facadeResponseEvict', { numberOfKeys: 1, lua: EVICT_SCRIPT });
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
    async set(key, data, entities, ttl) {
      const kept = keeping(data, ttl);
      if (!kept) return;
      try {
        const value = JSON.stringify({ result: data, scope: kept.policy.scope });
        await commands.facadeResponseSet(
          PREFIX + key,
          SESSION_PREFIX + sessionOf(key),
          value,
          kept.ms,
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
        const { result, scope } = JSON.parse(value) as {
          result: ExecutionResult;
          scope: CachePolicy['scope'];
        };
        return served(result, scope, Number(msLeft));
      } catch (error) {
        warn(error);
        return memory.get(key);
      }
    },
    invalidate() {},
    async evictSession(session) {
      memory.evictSession(session);
      try {
        await commands.facadeResponseEvict(SESSION_PREFIX + session);
        recovered();
      } catch (error) {
        warn(error);
      }
    },
  };
}
