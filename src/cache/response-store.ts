// Where the response cache keeps answers: bounded in bytes in memory, or in Redis on the
// process's one connection (src/cache/redis-store.ts). Every key is
// `<session>:<operation>`, the session a hash of what shapes the answer's upstream calls
// (src/cache/use-response-cache.ts), so that a mutation can evict its caller's answers.
import type { ExecutionResult } from 'graphql';
import { ANSWER_POLICY, type WithPolicy } from './hints.js';
import { aged, type CachePolicy } from './policy.js';

export interface ResponseStore {
  readonly kind: 'memory' | 'redis';
  /** Holds nothing for sure (then a lookup is skipped, and with it hashing the key). */
  readonly empty: boolean;
  /** The answer kept under `key` with the lifetime it has left, or null; never rejects. */
  get(key: string): ExecutionResult | null | Promise<ExecutionResult | null>;
  /**
   * Keeps `result` for what its policy allows, unless its session was evicted at or after `since`
   * (ms, when its execution began): a read in flight across its caller's mutation is not kept.
   * Never rejects.
   */
  set(key: string, result: ExecutionResult, since: number): void | Promise<void>;
  /** Forgets every answer kept for `session`; never rejects. */
  evictSession(session: string): void | Promise<void>;
}

export const sessionOf = (key: string) => key.slice(0, key.indexOf(':'));

/** The policy an answer is kept with, if it may be kept at all. */
export function keeping(data: ExecutionResult): CachePolicy | undefined {
  const policy = (data as WithPolicy)[ANSWER_POLICY];
  if (!policy || policy.maxAge < 1 || data.errors?.length) return undefined;
  return policy;
}

/**
 * A kept answer as it is served: the text it was kept as, its extensions and the lifetime it has
 * left. Yoga writes an answer that has a `stringify` with it (called unbound) rather than
 * serialising it again, so its data is parsed from the text only when something reads it.
 * Whatever adds to a kept answer builds a new one without it (src/cache/use-response-cache.ts).
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

/**
 * What a kept answer is served as `elapsedMs` after it was kept, with the lifetimes it has left
 * (whole seconds); null once less than a second is left.
 */
export function served(
  text: string,
  extensions: ExecutionResult['extensions'],
  policy: CachePolicy,
  elapsedMs: number,
  data?: ExecutionResult['data'],
): ExecutionResult | null {
  const left = aged(policy, elapsedMs);
  return left.maxAge < 1 ? null : new KeptAnswer(text, extensions, left, data);
}

interface Entry {
  text: string;
  /** A copy of the answer's extensions, which Yoga reads on every answer it writes. */
  extensions: ExecutionResult['extensions'];
  policy: CachePolicy;
  keptAt: number;
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
    set(key, data, _since) {
      const policy = keeping(data);
      if (!policy) return;
      const json = JSON.stringify(data);
      const bytes = key.length + json.length;
      drop(key);
      if (bytes > maxBytes) return;
      entries.set(key, {
        text: json,
        extensions:
          data.extensions &&
          (JSON.parse(JSON.stringify(data.extensions)) as typeof data.extensions),
        policy,
        keptAt: Date.now(),
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
      const answer = served(entry.text, entry.extensions, entry.policy, Date.now() - entry.keptAt);
      if (!answer) {
        drop(key);
        return null;
      }
      entries.delete(key);
      entries.set(key, entry);
      return answer;
    },
    evictSession(session) {
      for (const key of sessions.get(session) ?? []) drop(key);
    },
  };
}
