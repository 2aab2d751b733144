// Automatic persisted queries, Apollo's protocol (docs/configuration.md#persisted-documents): a
// document is stored only once it has parsed and validated, which @graphql-yoga/plugin-apq cannot
// do (it stores in onParams, before parsing). Redis failing or slow is never the request's failure.
import { hash as hashOf } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';
import type { Result } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { LRU_ENTRY_BYTES, stringBytes } from '../cache/heap.js';
import type { Context, ServerContext } from '../context.js';
import { persistedQueryHash } from '../documents.js';
import { FacadeError, persistedQueryNotFound } from '../errors.js';
import type { RedisConnection } from '../redis.js';
import { requestState } from '../request-state.js';

/** The longest document stored, in UTF-8 bytes: MAX_TOKENS does not bound comments and spaces. */
export const APQ_MAX_DOCUMENT_BYTES = 64 * 1024;

export interface ApqStore {
  get(hash: string): string | null | Promise<string | null>;
  /** Only ever given a document that parsed and validated; never rejects. */
  set(hash: string, document: string): void | Promise<void>;
}

/** Bounded by what the documents hold in the heap: the hashes come from any caller. */
export function createMemoryApqStore(maxBytes: number): ApqStore {
  if (maxBytes === 0) return { get: () => null, set() {} };
  const documents = new LRUCache<string, string>({
    maxSize: maxBytes,
    sizeCalculation: (document, hash) =>
      stringBytes(hash) + stringBytes(document) + LRU_ENTRY_BYTES,
  });
  return {
    get: (hash) => documents.get(hash) ?? null,
    set(hash, document) {
      if (!documents.has(hash)) documents.set(hash, document);
    },
  };
}

// The documents (hash -> text), their last use (a sorted set, in ms) and the bytes they count,
// under REDIS_KEY_PREFIX: changed together, in one script, so that the total matches the
// documents whoever writes; one hash slot (`{apq}`), so that a Cluster runs the script.
const KEYS = ['{apq}:documents', '{apq}:used', '{apq}:bytes'];

// What Redis spends on an entry beyond its text, counted too so that the bound holds for Redis's
// memory however small the documents (docs/operations.md#redis-rate-limits-and-apq).
const ENTRY_OVERHEAD_BYTES = 256;

// Expired entries removed per write: one script never holds Redis for long.
const PURGE_PER_WRITE = 100;

// KEYS: documents, used, bytes. ARGV: hash, now (ms), expired-at-or-before (ms), ttl (ms).
const GET_SCRIPT = `
local used = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not used or tonumber(used) <= tonumber(ARGV[3]) then return false end
local document = redis.call('HGET', KEYS[1], ARGV[1])
if not document then return false end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ARGV[4]) end
return document
`;

// KEYS: documents, used, bytes. ARGV: hash, now (ms), expired-at-or-before (ms), ttl (ms),
// document, bound (bytes), entry overhead (bytes), expired entries to remove at most.
const SET_SCRIPT = `
local documents, used, bytes = KEYS[1], KEYS[2], KEYS[3]
local hash, document = ARGV[1], ARGV[5]
local bound, overhead = tonumber(ARGV[6]), tonumber(ARGV[7])
local total = tonumber(redis.call('GET', bytes) or '0')
local function drop(name)
  total = total - redis.call('HSTRLEN', documents, name) - #name - overhead
  redis.call('HDEL', documents, name)
  redis.call('ZREM', used, name)
end
for _, name in ipairs(redis.call('ZRANGEBYSCORE', used, '-inf', ARGV[3], 'LIMIT', 0, ARGV[8])) do
  drop(name)
end
if redis.call('ZSCORE', used, hash) then
  redis.call('ZADD', used, ARGV[2], hash)
elseif #hash + #document + overhead <= bound then
  redis.call('HSET', documents, hash, document)
  redis.call('ZADD', used, ARGV[2], hash)
  total = total + #hash + #document + overhead
  while total > bound do
    local oldest = redis.call('ZRANGE', used, 0, 0)[1]
    if not oldest then
      -- Nothing indexed is left to count (a key lost outside this script): start again empty.
      redis.call('DEL', documents)
      total = 0
      break
    end
    drop(oldest)
  end
end
if total < 0 then total = 0 end
redis.call('SET', bytes, total)
for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ARGV[4]) end
return total
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    facadeApqGet(...keysAndArgs: Array<string | number>): Result<string | null, Context>;
    facadeApqSet(...keysAndArgs: Array<string | number>): Result<number, Context>;
  }
}

/**
 * APQ's own key space in Redis, bounded by `maxBytes`, so that registrations never evict another
 * key; memory in front, and alone when Redis misses (docs/operations.md#redis-rate-limits-and-apq).
 */
export function createRedisApqStore(
  redis: RedisConnection,
  options: { ttlS: number; maxBytes: number; memoryBytes: number },
): ApqStore {
  redis.client.defineCommand('facadeApqGet', { numberOfKeys: KEYS.length, lua: GET_SCRIPT });
  redis.client.defineCommand('facadeApqSet', { numberOfKeys: KEYS.length, lua: SET_SCRIPT });
  const memory = createMemoryApqStore(options.memoryBytes);
  const ttlMs = options.ttlS * 1000;
  const common = (hash: string) => {
    const now = Date.now();
    return [...KEYS, hash, now, now - ttlMs, ttlMs];
  };
  return {
    async get(hash) {
      const local = memory.get(hash);
      if (local) return local;
      try {
        const stored = await redis.run(() => redis.client.facadeApqGet(...common(hash)));
        if (stored !== null) memory.set(hash, stored);
        return stored;
      } catch {
        return null;
      }
    },
    async set(hash, document) {
      memory.set(hash, document);
      try {
        await redis.run(() =>
          redis.client.facadeApqSet(
            ...common(hash),
            document,
            options.maxBytes,
            ENTRY_OVERHEAD_BYTES,
            PURGE_PER_WRITE,
          ),
        );
      } catch {}
    },
  };
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

export function useApq(store: ApqStore): Plugin<Context, ServerContext> {
  return {
    // Not async: a request without a hash, nearly every one, passes without a promise to wait for.
    onParams({ params, context, setParams }) {
      const hash = persistedQueryHash(params);
      if (hash === undefined) return;
      const { query } = params;
      if (query == null) {
        const stored = SHA256_HEX.test(hash) ? store.get(hash) : null;
        return Promise.resolve(stored).then((document) => {
          if (document == null) throw persistedQueryNotFound();
          setParams({ ...params, query: document });
        });
      }
      // Yoga's own parameter check answers a query that is not a string.
      if (typeof query !== 'string') return;
      if (hashOf('sha256', query, 'hex') !== hash) {
        // Apollo's code for it is not in the contract: it is the caller's input, wrongly hashed.
        const message =
          'extensions.persistedQuery.sha256Hash is not the SHA-256 of the query sent with it';
        throw new FacadeError('BAD_USER_INPUT', message, { http: { status: 400 } });
      }
      if (Buffer.byteLength(query) > APQ_MAX_DOCUMENT_BYTES) return;
      const state = requestState(context);
      state.apqDocuments ??= new Map();
      state.apqDocuments.set(hash, query);
      return;
    },
    onValidate({ context }) {
      const { params } = context;
      const hash = persistedQueryHash(params);
      const documents = requestState(context).apqDocuments;
      const document = hash && documents?.get(hash);
      if (!hash || !document || document !== params.query) return;
      documents?.delete(hash);
      return ({ valid }) => {
        if (valid) void store.set(hash, document);
      };
    },
  };
}
