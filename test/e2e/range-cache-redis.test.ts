// The kept ranges' tier in Redis: what one process fetched answers every process, stale answers
// included, one refresh for the fleet, and a mutation forgets the caller's ranges everywhere.
import type { ChildProcess } from 'node:child_process';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRangeCache } from '../../src/read/ranges.js';
import { createRedisRanges } from '../../src/read/ranges-redis.js';
import { createRefreshes, type Refreshes } from '../../src/read/refresh.js';
import type { RedisConnection } from '../../src/redis.js';
import {
  type HarnessOptions,
  postGraphQL,
  upstreamRequests,
  useHarness,
} from '../helpers/harness.js';
import { connected, hasRedis, inspector, startRedis, stopRedis } from '../helpers/redis.js';

const ROUTE = 'GET /git/v1/repo';
const as = (token: string) => ({ authorization: `Bearer ${token}` });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const PAST_MAX_AGE_MS = 1_100;
const page = (limit: number, offset = 0) =>
  `{ repositories(limit: ${limit}, offset: ${offset}) { total items { id } } }`;
type Page = { repositories: { total: number; items: Array<{ id: string }> } | null };

/** A harness over one redis-server, and replicas of the app on it: each its own memory and connection. */
function useFleet(options: HarnessOptions) {
  const h = useHarness(options);
  let redisProcess: ChildProcess | undefined;
  let url = '';
  const connections: RedisConnection[] = [];
  const state: { look?: Redis } = {};
  beforeAll(async () => {
    const redis = await startRedis();
    redisProcess = redis.process;
    url = redis.url;
    state.look = await inspector(url);
  }, 30_000);
  afterAll(async () => {
    for (const connection of connections) connection.disconnect();
    state.look?.disconnect();
    await stopRedis(redisProcess);
  });
  beforeEach(async () => {
    await state.look?.flushdb();
  });
  /** A process of the fleet: memory in front, Redis behind, refreshes of its own. */
  const replica = async (): Promise<{
    gql: <T>(query: string, token: string) => ReturnType<typeof postGraphQL<T>>;
    refreshes: Refreshes;
  }> => {
    const connection = await connected(url);
    connections.push(connection);
    const refreshes = createRefreshes();
    const app = h.createApp({
      // Without whole answers kept: each query below reaches the ranges.
      config: { responseCache: { enabled: false } },
      rangeCache: createRangeCache(8 * 1024 * 1024),
      sharedRanges: createRedisRanges(connection, { redisBytes: 8 * 1024 * 1024 }),
      refreshes,
    });
    return {
      gql: <T>(query: string, token: string) => postGraphQL<T>(app, query, undefined, as(token)),
      refreshes,
    };
  };
  /** Until the ranges' writes, made after the answer, have reached Redis. */
  const keptInRedis = (count = 1) =>
    expect
      .poll(async () => (await state.look?.keys('*{ranges}:e:*'))?.length ?? 0)
      .toBeGreaterThanOrEqual(count);
  return { h, replica, keptInRedis, look: () => state.look as Redis };
}

describe.skipIf(!hasRedis)('kept ranges shared in Redis', () => {
  describe('fresh', () => {
    const { h, replica, keptInRedis, look } = useFleet({
      sandbox: { repositoryCacheControl: 'max-age=60' },
    });

    it("answers a page one replica fetched on another's covered query, with no upstream call", async () => {
      const [one, two] = [await replica(), await replica()];
      const fetched = await one.gql<Page>(page(40), 'alice');
      expect(fetched.errors).toBeUndefined();
      await keptInRedis();
      h.sandbox.clearRequests();

      const covered = await two.gql<Page>(page(20, 10), 'alice');
      expect(covered.errors).toBeUndefined();
      expect(covered.data?.repositories?.items).toEqual(
        fetched.data?.repositories?.items.slice(10, 30),
      );
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(0);
      // Another credential never reads it.
      await two.gql<Page>(page(20, 10), 'bob');
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
      // No credential is written to Redis, in a key or a value.
      const keys = await look().keys('*');
      expect(keys.join(' ')).not.toMatch(/alice|bob/);
      for (const key of keys.filter((name) => name.includes(':e:')))
        expect(await look().get(key)).not.toMatch(/alice|Bearer/);
    });

    it("forgets the caller's ranges on every replica once its mutation has answered", async () => {
      const [one, two] = [await replica(), await replica()];
      await one.gql(page(10), 'carol');
      await keptInRedis();
      // Both hold it in memory now.
      await two.gql(page(10), 'carol');
      await two.gql(page(10), 'dave');
      h.sandbox.clearRequests();
      await two.gql(page(10), 'carol');
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(0);

      const mutation = await one.gql(
        'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }',
        'carol',
      );
      expect(mutation.errors).toBeUndefined();
      await two.gql(page(10), 'carol');
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
      // Only that caller's.
      await two.gql(page(10), 'dave');
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
    });
  });

  describe('stale-if-error', () => {
    const { h, replica, keptInRedis } = useFleet({
      sandbox: { repositoryCacheControl: 'max-age=1, stale-if-error=600' },
      config: { upstream: { retries: 0 } },
    });

    it('answers stale on a replica started during an outage, from what another kept', async () => {
      const one = await replica();
      const kept = await one.gql<Page>(page(20), 'erin');
      await keptInRedis();
      await sleep(PAST_MAX_AGE_MS);
      h.sandbox.setFault(ROUTE, { status: 503, body: { message: 'down' } });

      const started = await replica();
      const stale = await started.gql<Page>(page(10, 5), 'erin');
      expect(stale.errors).toBeUndefined();
      expect(stale.data?.repositories?.items).toEqual(kept.data?.repositories?.items.slice(5, 15));
      expect(stale.headers.get('cache-control')).toBe('private, no-store');
      // Never another caller's.
      const other = await started.gql<Page>(page(10, 5), 'frank');
      expect(other.errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
    });
  });

  describe('stale-while-revalidate', () => {
    const { h, replica, keptInRedis } = useFleet({
      // Two seconds: a range kept has a whole second left until the reads below find it stale.
      sandbox: { repositoryCacheControl: 'max-age=2, stale-while-revalidate=30' },
    });

    it('refreshes a stale page read twice on each of two replicas at once with one upstream call', async () => {
      const [one, two] = [await replica(), await replica()];
      await one.gql(page(20), 'gina');
      await keptInRedis();
      await two.gql(page(20), 'gina');
      await sleep(2_100);
      h.sandbox.clearRequests();

      const answers = await Promise.all([
        one.gql<Page>(page(20), 'gina'),
        two.gql<Page>(page(20), 'gina'),
        one.gql<Page>(page(20), 'gina'),
        two.gql<Page>(page(20), 'gina'),
      ]);
      for (const answer of answers) expect(answer.errors).toBeUndefined();
      await expect.poll(() => one.refreshes.running + two.refreshes.running).toBe(0);
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);

      // The refreshed page answers both, fresh, with no call.
      await keptInRedis();
      const fresh = await Promise.all([one.gql(page(20), 'gina'), two.gql(page(20), 'gina')]);
      for (const answer of fresh) expect(answer.headers.get('age')).toBeNull();
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
    });
  });
});
