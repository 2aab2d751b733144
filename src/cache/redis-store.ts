import type { ExecutionResult } from 'graphql';
import type { RedisConnection } from '../redis.js';
import type { CachePolicy } from '../upstream/cache-policy.js';
import { callerShare } from './heap.js';
import { createBoundedSpace, type Kept } from './redis-bounded.js';
import {
  agedAnswer,
  createMemoryResponseStore,
  policyToKeep,
  type ResponseStore,
  sessionOf,
} from './response-store.js';

// The response cache's key space in Redis (docs/caching.md#where-answers-are-kept), a bounded
// space of its own under REDIS_KEY_PREFIX: one key per answer, `R2 <since> <policy>` then its
// text, owned by its session, so that a mutation evicts the session's answers in one step.
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
  const answers = createBoundedSpace(redis, {
    tag: 'response',
    entry: 'answer',
    boundBytes: options.redisBytes,
    shareBytes: callerShare(options.redisBytes),
    entryOverheadBytes: ENTRY_OVERHEAD_BYTES,
    ownerOverheadBytes: SESSION_OVERHEAD_BYTES,
    purgePerWrite: PURGE_PER_WRITE,
    evictionMinMs: READ_MS,
  });
  const memory = createMemoryResponseStore(options.memoryBytes);
  return {
    kind: 'redis',
    empty: false,
    async set(key, answer, since) {
      const policy = policyToKeep(answer);
      if (!policy || Date.now() - since > READ_MS) return;
      const value = `R2 ${since} ${JSON.stringify(policy)}\n${JSON.stringify(answer.result)}`;
      try {
        await answers.set(key, value, policy.maxAge * 1000, { owner: sessionOf(key), since });
      } catch {
        memory.set(key, answer, since);
      }
    },
    async get(key) {
      let found: Kept | null;
      try {
        found = await answers.get(key);
      } catch {
        return memory.get(key);
      }
      if (!found) return null;
      const kept = parse(found.value);
      // Not written by this version: a miss, replaced when it is kept again.
      if (!kept || (found.evictedAt !== undefined && found.evictedAt >= kept.since)) return null;
      const { data, extensions } = JSON.parse(kept.text) as ExecutionResult;
      const elapsed = kept.policy.maxAge * 1000 - found.msLeft;
      return agedAnswer(kept.text, extensions, kept.policy, elapsed, data);
    },
    forgetHere(session) {
      memory.evictSession(session);
    },
    async evictSession(session) {
      memory.evictSession(session);
      try {
        await answers.evictOwner(session);
      } catch {
        // Left to the answers' own expiry.
      }
    },
  };
}
