import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisResponseStore } from '../../src/cache/redis-store.js';
import type { RedisConnection } from '../../src/redis.js';
import { createRedisApqStore } from '../../src/security/use-apq.js';
import { createRateLimiter, type RateLimiter } from '../../src/security/use-rate-limit.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { useHarness } from '../helpers/harness.js';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';
import { connected, hasRedis, inspector, startRedis, stopRedis } from '../helpers/redis.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const apq = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });
const TYPENAME = '{ __typename }';
// Another process on two shared cores: what it does next may take a while to show.
const POLL = { interval: 100, timeout: 15_000 };

type App = { fetch: (url: string, init: RequestInit) => Promise<Response> | Response };
type Body = {
  data?: Record<string, unknown> | null;
  errors?: Array<{ extensions?: { code?: string } }>;
};

async function postBody(app: App, body: Record<string, unknown>): Promise<Body> {
  const response = await app.fetch('http://facade.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Body;
}

/** How long `work` takes, in ms. */
async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const began = performance.now();
  const value = await work();
  return { ms: performance.now() - began, value };
}

describe('a Redis that stops answering, under a facade process', () => {
  it.runIf(!hasRedis && process.env.CI === 'true')('needs redis-server in CI', () => {
    expect.fail('redis-server is not installed: .ci/run installs Debian\'s "redis-server"');
  });

  describe.skipIf(!hasRedis)('paused with SIGSTOP', () => {
    let redisProcess: ChildProcess | undefined;
    let facade: FacadeProcess;
    let base: string;

    beforeAll(async () => {
      const redis = await startRedis();
      redisProcess = redis.process;
      facade = await startFacade({ REDIS_URL: redis.url });
      base = facade.url.replace('/graphql', '');
    }, 60_000);

    afterAll(async () => {
      redisProcess?.kill('SIGCONT');
      await facade?.stop(5_000);
      await stopRedis(redisProcess);
    }, 30_000);

    const readiness = async () => {
      const response = await fetch(`${base}/readiness`);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };

    it('answers at once, says so at /readiness and in its metrics, and uses Redis again after', async () => {
      await expect.poll(() => facade.lines.some((line) => line.store === 'redis'), POLL).toBe(true);
      expect((await post(facade.url, TYPENAME)).status).toBe(200);
      expect(await readiness()).toEqual({ status: 200, body: { ready: true, redis: 'available' } });

      // A loaded machine may have missed the deadline before: only what follows the pause counts.
      const before = facade.lines.length;
      redisProcess?.kill('SIGSTOP');
      try {
        const times: number[] = [];
        for (let i = 0; i < 10; i++) {
          const { ms, value } = await timed(() =>
            post(facade.url, TYPENAME, {}, AbortSignal.timeout(5_000)),
          );
          expect(value.body.data).toEqual({ __typename: 'Query' });
          times.push(ms);
        }
        expect(Math.max(...times)).toBeLessThan(1_000);
        // Still ready: Redis is a cache. Skipped, and said so.
        expect(await readiness()).toEqual({
          status: 200,
          body: { ready: true, redis: 'unavailable' },
        });
        const metrics = await (await fetch(`${base}/metrics`)).text();
        expect(metrics).toMatch(/^redis_available 0$/m);
        expect(metrics).toMatch(/^redis_commands_missed_total\{reason="timeout"\} [1-9]/m);
        expect(metrics).toMatch(/^redis_commands_missed_total\{reason="skipped"\} [1-9]/m);
        expect(
          facade.lines
            .slice(before)
            .filter((line) => /^Redis at .* not answering/.test(String(line.msg))),
        ).toHaveLength(1);
      } finally {
        redisProcess?.kill('SIGCONT');
      }

      // A request tries Redis again once the skipping time is over.
      await expect
        .poll(async () => {
          await post(facade.url, TYPENAME);
          return (await readiness()).body.redis;
        }, POLL)
        .toBe('available');
      expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^redis_available 1$/m);
      expect(
        facade.lines.some((line) => /^Redis at .* answering again$/.test(String(line.msg))),
      ).toBe(true);
    }, 60_000);
  });
});

describe('a Redis that stops answering, under each user of Redis', () => {
  describe.skipIf(!hasRedis)('paused with SIGSTOP', () => {
    const h = useHarness();
    let redisProcess: ChildProcess | undefined;
    let redis: RedisConnection;
    let look: Redis;
    let limiter: RateLimiter;
    const metrics = createMetrics();
    // Long enough to tell a request that waited for it from one that did not, on a loaded machine.
    const timeoutMs = 400;
    const document = '{ repositories(limit: 1) { total } }';
    const hash = sha256(document);

    beforeAll(async () => {
      const started = await startRedis();
      redisProcess = started.process;
      redis = await connected(started.url, {
        timeoutMs,
        onAvailability: (available) => metrics.observeRedis(available),
        onMiss: (reason) => metrics.countRedisMiss(reason),
      });
      look = await inspector(started.url);
      limiter = (await createRateLimiter(
        { points: 3, windowS: 600, redisUrl: started.url },
        undefined,
        false,
        redis,
      )) as RateLimiter;
    }, 30_000);

    afterAll(async () => {
      redisProcess?.kill('SIGCONT');
      redis?.disconnect();
      look?.disconnect();
      await stopRedis(redisProcess);
    });

    it('counts in memory, answers APQ and the response cache from memory, and waits no more once Redis is skipped', async () => {
      const app = h.createApp({
        metrics,
        apqStore: createRedisApqStore(redis, {
          ttlS: 600,
          maxBytes: 1 << 20,
          memoryBytes: 1 << 20,
        }),
        responseStore: createRedisResponseStore(redis, {
          redisBytes: 1 << 20,
          memoryBytes: 1 << 20,
        }),
      });
      const register = await postBody(app, { query: document, extensions: apq(hash) });
      expect(register.errors).toBeUndefined();
      await expect.poll(() => look.exists(`graphql-facade:{apq}:document:${hash}`)).toBe(1);

      redisProcess?.kill('SIGSTOP');
      try {
        // Until Redis is skipped, a command waits for its deadline, and no longer.
        const waited = await timed(() => limiter.consume('t:paused'));
        expect(waited.ms).toBeGreaterThanOrEqual(timeoutMs - 50);
        expect(waited.ms).toBeLessThan(timeoutMs + 500);
        expect(waited.value.retryAfter).toBeUndefined();
        await limiter.consume('t:paused');
        await limiter.consume('t:paused');
        expect(redis.available).toBe(false);

        // Skipped: nothing waits, and the memory counters refuse the fourth.
        const skipped = await timed(() => limiter.consume('t:paused'));
        expect(skipped.ms).toBeLessThan(timeoutMs / 4);
        expect(skipped.value.retryAfter).toBeGreaterThan(0);
        expect(skipped.value.res?.remainingPoints).toBe(0);

        const byHash = await timed(() => postBody(app, { extensions: apq(hash) }));
        expect(byHash.value.errors).toBeUndefined();
        expect(byHash.value.data).toMatchObject({ repositories: { total: expect.any(Number) } });
        expect(byHash.ms).toBeLessThan(timeoutMs);
        const unknown = await timed(() =>
          postBody(app, { extensions: apq(sha256('{ __typename }')) }),
        );
        expect(unknown.value.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
        expect(unknown.ms).toBeLessThan(timeoutMs);
        const query = await timed(() => postBody(app, { query: TYPENAME }));
        expect(query.value.data).toEqual({ __typename: 'Query' });
        expect(query.ms).toBeLessThan(timeoutMs);
        const scraped = await metrics.registry.metrics();
        expect(scraped).toMatch(/^redis_available 0$/m);
      } finally {
        redisProcess?.kill('SIGCONT');
      }

      // Once the skipping time is over, one command tries Redis, and Redis is used again.
      await expect
        .poll(async () => {
          await limiter.consume('t:after');
          return redis.available;
        }, POLL)
        .toBe(true);
      await limiter.consume('t:after');
      expect(await look.get('graphql-facade:rl:t:after')).not.toBeNull();
      expect((await metrics.registry.metrics()).match(/^redis_available 1$/m)).not.toBeNull();
    }, 60_000);
  });
});
