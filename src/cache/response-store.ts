// Where the response cache keeps answers: docs/caching.md#where-answers-are-kept. Every key is
// `<session>:<operation>`, so that a mutation can evict its session's answers.
import type { ExecutionResult } from 'graphql';
import { LRUCache } from 'lru-cache';
import { aged, type CachePolicy } from '../upstream/cache-policy.js';
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

/** An executed answer and the policy it may be kept with. */
export interface Answer {
  result: ExecutionResult;
  policy?: CachePolicy | undefined;
}

export interface ResponseStore {
  readonly kind: 'memory' | 'redis';
  /** Holds nothing for sure: the look-up, and hashing its key, are skipped. */
  readonly empty: boolean;
  /** The answer kept under `key` with the lifetime it has left, or null; never rejects. */
  get(key: string): KeptAnswer | null | Promise<KeptAnswer | null>;
  /**
   * Keeps the answer for what its policy allows, unless its session was evicted at or after
   * `since` (ms, when its execution began). Never rejects.
   */
  set(key: string, answer: Answer, since: number): void | Promise<void>;
  /** Forgets every answer kept for `session`; never rejects. */
  evictSession(session: string): void | Promise<void>;
  /**
   * Forgets what this process alone keeps for `session`, as another worker asked after the
   * session's mutation (what is shared, that worker has evicted already).
   */
  forgetHere(session: string): void;
}

export const sessionOf = (key: string) => key.slice(0, key.indexOf(':'));

/** The policy an answer is kept with, if it may be kept at all. */
export function policyToKeep({ result, policy }: Answer): CachePolicy | undefined {
  if (!policy || policy.maxAge < 1 || result.errors?.length) return undefined;
  return policy;
}

/**
 * A kept answer as it is served. Yoga writes the text its `stringify` (called unbound) returns, so
 * whatever adds to a kept answer must build a new one without it; `data` is parsed when read.
 */
export class KeptAnswer implements ExecutionResult {
  readonly extensions: ExecutionResult['extensions'];
  readonly stringify: () => string;
  readonly #text: string;
  // Private, so that no spread or serialisation of the answer shows it.
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

/** A kept answer `elapsedMs` after it was kept; null once less than a second is left. */
export function agedAnswer(
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
  /** A copy: Yoga reads the extensions on every answer it writes. */
  extensions: ExecutionResult['extensions'];
  policy: CachePolicy;
  keptAt: number;
  bytes: number;
}

/** One session's answers by operation, oldest first, and the bytes they hold. */
interface Session {
  answers: Map<string, Kept>;
  bytes: number;
}

// Count every field the records hold (docs/caching.md#bounds): an answer's record, keptAt, policy,
// map entry and operation (a slice of its key); a session's record, map, key and lru-cache entry.
const KEPT_BYTES = 64 + 16 + POLICY_BYTES + MAP_ENTRY_BYTES + SLICE_BYTES;
const SESSION_BYTES = 40 + MAP_BYTES + SLICE_BYTES + LRU_ENTRY_BYTES;

/**
 * Answers in this process's memory, per session, bounded by the heap they hold (text, extensions,
 * keys, records), never by a count; one session keeps at most its share.
 */
export function createMemoryResponseStore(maxBytes: number): ResponseStore {
  const { records, entries, share } = memoryBounds(maxBytes);
  const evictions = createEvictions(records);
  const sessions = new LRUCache<string, Session>({
    maxSize: Math.max(1, entries),
    sizeCalculation: (session) => session.bytes,
  });
  const operationOf = (key: string, session: string) => key.slice(session.length + 1);
  // lru-cache sizes a value only when it is set: a changed session is set again as a new record.
  const resize = (name: string, answers: Map<string, Kept>, bytes: number) => {
    if (answers.size === 0) sessions.delete(name);
    else sessions.set(name, { answers, bytes });
  };
  const evict = (session: string) => {
    evictions.record(session);
    sessions.delete(session);
  };
  return {
    kind: 'memory',
    get empty() {
      return sessions.size === 0;
    },
    set(key, answer, since) {
      const policy = policyToKeep(answer);
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
      const answer = agedAnswer(kept.text, kept.extensions, kept.policy, Date.now() - kept.keptAt);
      session.answers.delete(operation);
      if (!answer) {
        resize(name, session.answers, session.bytes - kept.bytes);
        return null;
      }
      // Most recently used last: past its share, a session loses its oldest first.
      session.answers.set(operation, kept);
      return answer;
    },
    evictSession: evict,
    forgetHere: evict,
  };
}
