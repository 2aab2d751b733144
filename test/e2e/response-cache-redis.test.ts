import type { ChildProcess } from 'node:child_process';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedisResponseStore } from '../../src/cache/redis-store.js';
import type { RedisConnection } from '../../src/redis.js';
import { checkCacheIsolation, TENANT } from '../helpers/cache-isolation.js';
import { postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';
import { connected, hasRedis, inspector, startRedis, stopRedis } from '../helpers/redis.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: inject('fcSeed') });

const LIST = '{ repositories(limit: 3) { items { id } } }';
const REPO_ROUTE = 'GET /git/v1/repo';
const MEMORY_BYTES = 1024 * 1024;

describe('response cache in Redis', () => {
  describe.skipIf(!hasRedis)('with a real redis-server', () => {
    const h = useHarness({
      sandbox: { repositoryCacheControl: 'max-age=60', repositoryVaryHeader: TENANT },
      config: { forwardHeaders: [TENANT] },
    });
    let redisProcess: ChildProcess | undefined;
    // One connection per replica, as each facade process has its own.
    const connections: RedisConnection[] = [];
    let look: Redis;

    beforeAll(async () => {
      const redis = await startRedis();
      redisProcess = redis.process;
      connections.push(await connected(redis.url), await connected(redis.url));
      look = await inspector(redis.url);
    }, 30_000);

    afterAll(async () => {
      for (const connection of connections) connection.disconnect();
      look?.disconnect();
      await stopRedis(redisProcess);
    });

    const replica = (index: 0 | 1, redisBytes = 1024 * 1024) =>
      h.createApp({
        responseStore: createRedisResponseStore(connections[index] as RedisConnection, {
          redisBytes,
          memoryBytes: MEMORY_BYTES,
        }),
      });

    it("never serves a caller an answer made for another's credential or forwarded headers", async () => {
      const hits = await checkCacheIsolation({
        cached: async () => {
          await look.flushdb();
          return replica(0);
        },
        uncached: h.createApp({ config: { responseCache: { enabled: false, maxBytes: 0 } } }),
        numRuns: 20,
      });
      expect(hits).toBeGreaterThan(0);
    });

    it('bounds its own key space, evicting the answers soonest to expire', async () => {
      await look.flushdb();
      // Room for about three answers of this size, with their allowance.
      const app = replica(0, 3 * 1_100);
      for (const token of ['a', 'b', 'c', 'd', 'e', 'f']) {
        const answer = await postGraphQL(app, LIST, undefined, {
          authorization: `Bearer ${token}`,
        });
        expect(answer.errors).toBeUndefined();
      }
      const counted = Number(await look.get('graphql-facade:{response}:index:bytes'));
      expect(counted).toBeGreaterThan(1_100);
      expect(counted).toBeLessThanOrEqual(3 * 1_100);
      const kept = await look.keys('graphql-facade:{response}:answer:*');
      expect(kept.length).toBeGreaterThan(1);
      expect(kept.length).toBeLessThan(6);
      // The index holds what Redis holds, and every one of its keys expires by itself.
      expect(await look.zcard('graphql-facade:{response}:index:expiry')).toBe(kept.length);
      for (const key of [
        'graphql-facade:{response}:index:sizes',
        'graphql-facade:{response}:index:expiry',
        'graphql-facade:{response}:index:bytes',
        'graphql-facade:{response}:index:owners',
        ...kept,
      ])
        expect(await look.pttl(key)).toBeGreaterThan(0);
    });

    it('serves a kept answer as its text with its whole policy, and reads a value of another form as a miss', async () => {
      await look.flushdb();
      const store = createRedisResponseStore(connections[0] as RedisConnection, {
        redisBytes: 1024 * 1024,
        memoryBytes: 0,
      });
      const policy = { maxAge: 60, privateMaxAge: 30, scope: 'PUBLIC' as const };
      await store.set('session:kept', { result: { data: { n: 1 } }, policy }, Date.now());
      const kept = await store.get('session:kept');
      expect(kept?.data).toEqual({ n: 1 });
      expect(kept?.stringify()).toBe('{"data":{"n":1}}');
      // Served with the lifetimes it has left: a second less once a millisecond has passed.
      expect(kept?.policy.scope).toBe('PUBLIC');
      expect([59, 60]).toContain(kept?.policy.maxAge);
      expect([29, 30]).toContain(kept?.policy.privateMaxAge);

      // As older versions wrote their answers: one JSON object with the scope inside, then the
      // scope alone on a line before the text.
      await look.set(
        'graphql-facade:{response}:answer:session:old',
        JSON.stringify({ result: { data: { n: 2 } }, scope: 'PRIVATE' }),
        'PX',
        60_000,
      );
      expect(await store.get('session:old')).toBeNull();
      await look.set('graphql-facade:{response}:answer:session:older', 'PUBLIC\n{"data":{"n":3}}');
      expect(await store.get('session:older')).toBeNull();
    });

    it('answers right, never with an error, while Redis is gone', async () => {
      const app = replica(0);
      const caller = { authorization: 'Bearer outage' };
      const before = await postGraphQL(app, LIST, undefined, caller);
      await stopRedis(redisProcess);
      await expect
        .poll(() => connections.every((connection) => connection.client.status !== 'ready'))
        .toBe(true);
      h.sandbox.clearRequests();

      const during = await postGraphQL(app, LIST, undefined, caller);
      expect(during.errors).toBeUndefined();
      expect(during.data).toEqual(before.data);
      // Kept in memory meanwhile: the next one is a hit with no upstream call.
      const again = await postGraphQL(app, LIST, undefined, caller);
      expect(again.data).toEqual(before.data);
      expect(again.extensions?.upstreamCalls).toEqual({ calls: [], cache: 'hit' });
      // The range `before` fetched is kept in this process's memory too, so neither called.
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(0);
      const other = await postGraphQL(app, LIST, undefined, { authorization: 'Bearer someone' });
      expect(other.data).not.toEqual(before.data);
    });
  });
});
