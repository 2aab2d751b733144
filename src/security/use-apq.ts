// Automatic persisted queries, Apollo's protocol (docs/configuration.md#persisted-documents): a
// document is stored only once it has parsed and validated, which @graphql-yoga/plugin-apq cannot
// do (it stores in onParams, before parsing). Redis failing or slow is never the request's failure.
import { hash as hashOf } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import { LRU_ENTRY_BYTES, stringBytes } from '../cache/heap.js';
import { createBoundedSpace } from '../cache/redis-bounded.js';
import type { Context, ServerContext } from '../context.js';
import { FacadeError, persistedQueryNotFound } from '../errors.js';
import type { RedisConnection } from '../redis.js';
import { persistedQueryHash } from '../request-document.js';
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

// What Redis spends on a document beyond its text, counted too so that the bound holds for
// Redis's memory however small the documents (docs/operations.md#redis-rate-limits-and-apq).
const ENTRY_OVERHEAD_BYTES = 450;

// Expired documents removed per write: one script never holds Redis for long.
const PURGE_PER_WRITE = 100;

/**
 * APQ's own bounded key space in Redis (`{apq}:document:<hash>` under REDIS_KEY_PREFIX), so that
 * registrations never evict another key: each read through Redis extends a document's life by
 * `ttlS`, and past `maxBytes` the documents soonest to expire (the least recently used) go first.
 * Memory in front, and alone when Redis misses (docs/operations.md#redis-rate-limits-and-apq).
 */
export function createRedisApqStore(
  redis: RedisConnection,
  options: { ttlS: number; maxBytes: number; memoryBytes: number },
): ApqStore {
  const documents = createBoundedSpace(redis, {
    tag: 'apq',
    entry: 'document',
    boundBytes: options.maxBytes,
    entryOverheadBytes: ENTRY_OVERHEAD_BYTES,
    purgePerWrite: PURGE_PER_WRITE,
  });
  const memory = createMemoryApqStore(options.memoryBytes);
  const ttlMs = options.ttlS * 1000;
  return {
    async get(hash) {
      const local = memory.get(hash);
      if (local) return local;
      try {
        const stored = await documents.get(hash, ttlMs);
        if (stored) memory.set(hash, stored.value);
        return stored?.value ?? null;
      } catch {
        return null;
      }
    },
    async set(hash, document) {
      memory.set(hash, document);
      try {
        await documents.set(hash, document, ttlMs);
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
