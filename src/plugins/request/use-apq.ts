import { type APQStore, useAPQ } from '@graphql-yoga/plugin-apq';
import type { Plugin } from 'graphql-yoga';
import type { Redis } from 'ioredis';
import { FacadeError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';

const KEY_PREFIX = 'graphql-facade:apq:';

export interface ApqStore extends APQStore {
  readonly kind: 'memory' | 'redis';
}

/**
 * The documents APQ has seen, least recently used first out, bounded by their total length in
 * UTF-16 code units (about bytes for a GraphQL document): the hashes come from any caller, so the
 * count alone would not bound the memory.
 */
export function createMemoryApqStore(maxBytes: number): ApqStore {
  const documents = new Map<string, string>();
  let size = 0;
  const cost = (hash: string, document: string) => hash.length + document.length;
  return {
    kind: 'memory',
    get(hash) {
      const document = documents.get(hash);
      if (document === undefined) return null;
      documents.delete(hash);
      documents.set(hash, document);
      return document;
    },
    set(hash, document) {
      if (documents.has(hash)) return;
      const added = cost(hash, document);
      if (added > maxBytes) return;
      documents.set(hash, document);
      size += added;
      for (const [oldest, text] of documents) {
        if (size <= maxBytes) break;
        documents.delete(oldest);
        size -= cost(oldest, text);
      }
    },
  };
}

/**
 * Documents in Redis, shared by every replica, each kept `ttlS` seconds from its last upload, with
 * the memory store in front. Redis failing is never the request's failure: a read that fails
 * answers from memory (or not found, which makes the client send the document again), a write
 * that fails is kept in memory only.
 */
export function createRedisApqStore(
  redis: Redis,
  options: { ttlS: number; memoryBytes: number; logger?: Logger | undefined },
): ApqStore {
  const memory = createMemoryApqStore(options.memoryBytes);
  // One line when Redis starts failing, not one per request while it is away.
  let failing = false;
  const warn = (error: unknown) => {
    if (!failing) options.logger?.warn({ err: error }, 'APQ store (Redis) failing; memory only');
    failing = true;
  };
  const recovered = () => {
    if (failing) options.logger?.info('APQ store (Redis) answering again');
    failing = false;
  };
  return {
    kind: 'redis',
    async get(hash) {
      const local = await memory.get(hash);
      if (local) return local;
      try {
        const stored = await redis.get(KEY_PREFIX + hash);
        recovered();
        if (stored !== null) await memory.set(hash, stored);
        return stored;
      } catch (error) {
        warn(error);
        return null;
      }
    },
    async set(hash, document) {
      await memory.set(hash, document);
      try {
        await redis.set(KEY_PREFIX + hash, document, 'EX', options.ttlS);
        recovered();
      } catch (error) {
        warn(error);
      }
    },
  };
}

/** Apollo's code for a mismatch is not in the contract: it is the caller's input, wrongly hashed. */
function contractError(error: unknown): unknown {
  const code = (error as { extensions?: { code?: unknown } } | undefined)?.extensions?.code;
  if (code === 'PERSISTED_QUERY_NOT_FOUND') {
    // 200, as Apollo's protocol has it: clients read the code from the body and resend the document.
    return new FacadeError('PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound', {
      http: { status: 200 },
    });
  }
  if (code === 'PERSISTED_QUERY_MISMATCH') {
    return new FacadeError(
      'BAD_USER_INPUT',
      'extensions.persistedQuery.sha256Hash is not the SHA-256 of the query sent with it',
      { http: { status: 400 } },
    );
  }
  return error;
}

/**
 * Automatic persisted queries (Apollo's protocol): a hash alone runs the document stored under it,
 * or answers PERSISTED_QUERY_NOT_FOUND; a hash with its document is checked against it (SHA-256)
 * and stores it. Runs before parsing, so a refused request costs no upstream call.
 */
export function useApq(store: ApqStore): Plugin {
  const inner = useAPQ({ store }) as Plugin;
  const onParams = inner.onParams;
  if (!onParams) throw new Error('useAPQ has no onParams hook');
  return {
    async onParams(payload) {
      try {
        await onParams(payload);
      } catch (error) {
        throw contractError(error);
      }
    },
  };
}
