import { describe, expect, it } from 'vitest';
import { createRedisRanges, type SharedRanges } from '../../src/read/ranges-redis.js';
import type { Repository } from '../../src/upstream/repository-list.js';
import { hasRedis, usedMemory } from '../helpers/redis.js';
import { useRedisServer } from '../helpers/redis-server.js';

const MiB = 1024 * 1024;
const policy = { maxAge: 600, scope: 'PRIVATE' as const };
const item = (size: number): Repository => ({
  id: 'r'.repeat(size),
  defaultBranch: null,
  branches: [],
  tags: [],
});
const caller = (i: number) => ({ authorization: `Bearer caller-${i}` });

/** Keeps `count` ranges of one item each, a few hundred at a time as a busy replica would. */
async function fill(
  ranges: SharedRanges,
  count: number,
  who: (i: number) => number,
  size: number,
  mark = '',
) {
  for (let i = 0; i < count; i += 250) {
    const batch: Array<Promise<boolean>> = [];
    for (let j = i; j < Math.min(count, i + 250); j++) {
      const covering = { repositories: [item(size)], total: 1_000_000, offset: j };
      const range = { call: caller(who(j)), covering, start: j, policy, since: Date.now(), mark };
      batch.push(ranges.keep(range));
    }
    await Promise.all(batch);
  }
}

describe("the kept ranges' tier in Redis, held to its bound", () => {
  describe.skipIf(!hasRedis)('with a real redis-server', () => {
    const server = useRedisServer();

    // RANGE_CACHE_REDIS_BYTES promises Redis's memory, whatever the ranges look like: each shape
    // is written past twice what the bound holds. One caller alone reaches its share only.
    const bound = 4 * MiB;
    const share = MiB;
    it.each([
      {
        shape: 'ranges of one tiny item, each of its own caller',
        count: 16_000,
        size: 1,
        reach: bound,
      },
      {
        shape: 'ranges of one tiny item, one caller',
        count: 6_000,
        size: 1,
        one: true,
        reach: share,
      },
      { shape: 'ranges of 2 kB, a hundred callers', count: 4_000, size: 2_000, reach: bound },
    ])(
      'grows Redis by its bound within 1.5 times: $shape',
      async ({ count, size, one, reach }) => {
        const ranges = createRedisRanges(server.redis, { redisBytes: bound });
        // The scripts loaded, so that what grows is the ranges alone.
        await fill(ranges, 1, () => 0, 1);
        await server.look.flushall();
        const before = await usedMemory(server.look);
        await fill(ranges, count, (i) => (one ? 1 : size > 1_000 ? i % 100 : i), size);
        const grown = (await usedMemory(server.look)) - before;
        expect(grown).toBeGreaterThan(reach / 1.5);
        expect(grown).toBeLessThan(reach * 1.5);
        const counted = Number(await server.look.get('graphql-facade:{ranges}:index:bytes'));
        expect(counted).toBeLessThanOrEqual(bound);
        // Every key in one slot: the scripts run on a Cluster.
        for (const key of await server.look.keys('*'))
          expect(key).toMatch(/^graphql-facade:\{ranges\}:/);
      },
      60_000,
    );

    it('lets a mutation mark live a minute at most, counted in the bound', async () => {
      const ranges = createRedisRanges(server.redis, { redisBytes: bound });
      await fill(ranges, 10, () => 3, 1);
      await ranges.evictCaller(caller(3));
      const marks = (await server.look.keys('*{ranges}:mark:*')) as string[];
      expect(marks).toHaveLength(1);
      const ttl = await server.look.pttl(marks[0] as string);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
      // The caller's ranges are gone, and nothing of them is counted.
      expect(await server.look.keys('*{ranges}:e:*')).toEqual([]);
      const counted = Number(await server.look.get('graphql-facade:{ranges}:index:bytes'));
      expect(counted).toBeGreaterThan(0);
      expect(counted).toBeLessThan(1_000);
      // A range whose read began under the old mark is not kept.
      await fill(ranges, 1, () => 3, 1, '');
      expect(await server.look.keys('*{ranges}:e:*')).toEqual([]);
    });
  });
});
