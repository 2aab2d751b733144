// Where the response cache keeps answers: bounded in bytes in memory, or in Redis on the
// process's one connection (src/cache/redis-store.ts). Every key is
// `<session>:<operation>`, the session a hash of what shapes the answer's upstream calls
// (src/cache/use-response-cache.ts), so that a mutation can evict its caller's answers.
import type { ExecutionResult } from 'graphql';
import { LRUCache } from 'lru-cache';
import {
  createEvictions,
  heapBytes,
  LRU_ENTRY_BYTES,
  MAP_BYTES,
  MAP_ENTRY_BYTES,
  memoryBounds,
  POLICY_BYTES,
  SLICE_BYTES,
  stringBytes,
} from './heap.js';
import { aged, type CachePolicy } from './policy.js';

/** An executed answer and the policy it may be kept with (src/cache/hints.ts). */
export interface Answer {
  result: ExecutionResult;
  policy?: CachePolicy | undefined;
}

export interface ResponseStore {
  readonly kind: 'memory' | 'redis';
  /** Holds nothing for sure (then a lookup is skipped, and with it hashing the key). */
  readonly empty: boolean;
  /** The answer kept under `key` with the lifetime it has left, or null; never rejects. */
  get(key: string): KeptAnswer | null | Promise<KeptAnswer | null>;
  /**
   * Keeps the answer's result for what its policy allows, unless its session was evicted at or
   * after `since` (ms, when its execution began): a read in flight across its caller's mutation is
   * not kept. Never rejects.
   */
  set(key: string, answer: Answer, since: number): void | Promise<void>;
  /** Forgets every answer kept for `session`; never rejects. */
  evictSession(session: string): void | Promise<void>;
}

export const sessionOf = (key: string) => key.slice(0, key.indexOf(':'));

/** The policy an answer is kept with, if it may be kept at all. */
export function keeping({ result, policy }: Answer): CachePolicy | undefined {
  if (!policy || policy.maxAge < 1 || result.errors?.length) return undefined;
  return policy;
}

/**
 * A kept answer as it is served: the text it was kept as, its extensions and the lifetime it has
 * left. Yoga writes an answer that has a `stringify` with it (called unbound) rather than
 * serialising it again, so its data is parsed from the text only when something reads it.
 * Whatever adds to a kept answer builds a new one without it (src/cache/use-response-cache.ts).
 */
export class KeptAnswer implements ExecutionResult {
  readonly extensions: ExecutionResult['extensions'];
  readonly stringify: () => string;
  readonly #text: string;
  // Private, as the text is: no spread or serialisation of the answer ever shows it.
  readonly #policy: CachePolicy;
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
    this.#policy = policy;
    this.stringify = () => text;
  }
  /** The lifetimes it has left. */
  get policy(): CachePolicy {
    return this.#policy;
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
): KeptAnswer | null {
  const left = aged(policy, elapsedMs);
  return left.maxAge < 1 ? null : new KeptAnswer(text, extensions, left, data);
}

interface Kept {
  text: string;
  /** A copy of the answer's extensions, which Yoga reads on every answer it writes. */
  extensions: ExecutionResult['extensions'];
  policy: CachePolicy;
  keptAt: number;
  bytes: number;
}

/** One session's answers by operation, oldest first, and the bytes they and the session hold. */
interface Session {
  answers: Map<string, Kept>;
  bytes: number;
}

// The answer's record, its keptAt, its policy, its entry in its session's map and its operation's
// slice of the key; a session's record, map, key (a slice of its first answer's) and entry in the
// cache.
const KEPT_BYTES = 64 + 16 + POLICY_BYTES + MAP_ENTRY_BYTES + SLICE_BYTES;
const SESSION_BYTES = 40 + MAP_BYTES + SLICE_BYTES + LRU_ENTRY_BYTES;

/**
 * Answers in this process's memory, bounded by what they hold in the heap (text, extensions,
 * keys, records; RESPONSE_CACHE_BYTES): one answer may be a few hundred bytes or several
 * megabytes, so a count bounds nothing. Kept per session, so that a mutation evicts its caller's
 * answers at once: the sessions least recently used go first, and one session keeps no more than
 * its share (its own oldest answers go first). A kept answer is its JSON text, taken when it is
 * kept and never changed; each hit is served from it.
 *
 * The plugin's invalidation by type and id has nothing to find here: no mutation returns a type a
 * query does. A mutation evicts its caller's answers instead (evictSession).
 */
export function createMemoryResponseStore(maxBytes: number): ResponseStore {
  const { records, entries, share } = memoryBounds(maxBytes);
  const evictions = createEvictions(records);
  const sessions = new LRUCache<string, Session>({
    maxSize: Math.max(1, entries),
    sizeCalculation: (session) => session.bytes,
  });
  const operationOf = (key: string, session: string) => key.slice(session.length + 1);
  // lru-cache sizes a value when it is set, and again only when another value replaces it: a
  // session that changed is set again as a new record of the same answers.
  const resize = (name: string, answers: Map<string, Kept>, bytes: number) => {
    if (answers.size === 0) sessions.delete(name);
    else sessions.set(name, { answers, bytes });
  };
  return {
    kind: 'memory',
    get empty() {
      return sessions.size === 0;
    },
    set(key, answer, since) {
      const policy = keeping(answer);
      if (!policy) return;
      const data = answer.result;
      const name = sessionOf(key);
      if (!evictions.allows(name, since)) return;
      const text = JSON.stringify(data);
      const extensions =
        data.extensions && (JSON.parse(JSON.stringify(data.extensions)) as typeof data.extensions);
      const kept: Kept = {
        text,
        extensions,
        policy,
        keptAt: Date.now(),
        bytes: KEPT_BYTES + stringBytes(key) + stringBytes(text) + heapBytes(extensions),
      };
      const session = sessions.get(name);
      const answers = session?.answers ?? new Map<string, Kept>();
      let bytes = session?.bytes ?? SESSION_BYTES;
      const operation = operationOf(key, name);
      const old = answers.get(operation);
      if (old) {
        answers.delete(operation);
        bytes -= old.bytes;
      }
      if (SESSION_BYTES + kept.bytes <= share) {
        answers.set(operation, kept);
        bytes += kept.bytes;
        for (const [oldest, { bytes: freed }] of answers) {
          if (bytes <= share) break;
          answers.delete(oldest);
          bytes -= freed;
        }
      }
      resize(name, answers, bytes);
    },
    get(key) {
      const name = sessionOf(key);
      const session = sessions.get(name);
      const operation = operationOf(key, name);
      const kept = session?.answers.get(operation);
      if (!session || !kept) return null;
      const answer = served(kept.text, kept.extensions, kept.policy, Date.now() - kept.keptAt);
      session.answers.delete(operation);
      if (!answer) {
        resize(name, session.answers, session.bytes - kept.bytes);
        return null;
      }
      // The most recently used last: past its share, a session loses its oldest first.
      session.answers.set(operation, kept);
      return answer;
    },
    evictSession(session) {
      evictions.record(session);
      sessions.delete(session);
    },
  };
}
