import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisConnection } from '../../src/redis.js';
import { createRedisApqStore } from '../../src/security/use-apq.js';
import { createRateLimiter } from '../../src/security/use-rate-limit.js';
import { useHarness } from '../helpers/harness.js';
import { startFacade } from '../helpers/process.js';
import {
  connected,
  hasRedis,
  inspector,
  startRedis,
  stopRedis,
  usedMemory,
} from '../helpers/redis.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const apq = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

type App = { fetch: (url: string, init: RequestInit) => Promise<Response> | Response };
type Body = {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
};

async function post(app: App, body: Record<string, unknown>) {
  const response = await app.fetch('http://facade.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Body };
}

/** A hash-only GET, as urql's and Apollo Client's APQ links send a query. */
async function getByHash(app: App, hash: string) {
  const search = new URLSearchParams({ extensions: JSON.stringify(apq(hash)) });
  const response = await app.fetch(`http://facade.test/graphql?${search}`, {
    // Outside a browser (no Fetch Metadata) a GET names itself with a CSRF header (the CSRF rule).
    headers: { accept: 'application/json', 'x-graphql-csrf': '1' },
  });
  return { status: response.status, body: (await response.json()) as Body };
}

const codeOf = (body: Body) => body.errors?.[0]?.extensions?.code;

// APQ's key space in Redis (src/security/use-apq.ts).
// APQ's key space: one key per document, and its index.
const DOCUMENT = (hash: string) => `graphql-facade:{apq}:document:${hash}`;
const EXPIRY = 'graphql-facade:{apq}:index:expiry';
const BYTES = 'graphql-facade:{apq}:index:bytes';
const SIZES = 'graphql-facade:{apq}:index:sizes';

/** The hashes of the documents Redis holds. */
async function storedHashes(redis: Redis): Promise<string[]> {
  return (await redis.keys(DOCUMENT('*'))).map((key) => key.slice(DOCUMENT('').length));
}

/** Empties APQ's key space, and nothing else. */
async function clearApq(redis: Redis): Promise<void> {
  const keys = await redis.keys('graphql-facade:{apq}:*');
  if (keys.length > 0) await redis.del(...keys);
}

describe('APQ documents in Redis, shared by two replicas', () => {
  it.runIf(!hasRedis && process.env.CI === 'true')('needs redis-server in CI', () => {
    expect.fail('redis-server is not installed: .ci/run installs Debian\'s "redis-server"');
  });

  describe.skipIf(!hasRedis)('with a real redis-server', () => {
    const h = useHarness();
    let redisProcess: ChildProcess | undefined;
    // One connection per replica, as each facade process has its own.
    const connections: RedisConnection[] = [];
    let redis: Redis;
    let a: App;
    let b: App;
    let redisUrl: string;

    beforeAll(async () => {
      const started = await startRedis();
      redisProcess = started.process;
      redisUrl = started.url;
      connections.push(await connected(redisUrl), await connected(redisUrl));
      redis = await inspector(redisUrl);
      const [first, second] = connections as [RedisConnection, RedisConnection];
      const options = { ttlS: 120, maxBytes: 1024 * 1024, memoryBytes: 1024 * 1024 };
      a = h.createApp({ apqStore: createRedisApqStore(first, options) });
      b = h.createApp({ apqStore: createRedisApqStore(second, options) });
    }, 30_000);

    afterAll(async () => {
      for (const connection of connections) connection.disconnect();
      redis?.disconnect();
      await stopRedis(redisProcess);
    });

    const first = '{ repositories(limit: 1) { total } }';
    const second = '{ repositories(limit: 2) { total } }';

    it('answers a hash one replica stored on the other, and keeps it with a TTL', async () => {
      const hash = sha256(first);
      expect(codeOf((await getByHash(b, hash)).body)).toBe('PERSISTED_QUERY_NOT_FOUND');
      const stored = await post(a, { query: first, extensions: apq(hash) });
      expect(stored.body.errors).toBeUndefined();
      const { status, body } = await getByHash(b, hash);
      expect(status).toBe(200);
      expect(body.errors).toBeUndefined();
      expect(body.data?.repositories).toMatchObject({ total: expect.any(Number) });
      expect(await redis.get(DOCUMENT(hash))).toBe(first);
      for (const key of [DOCUMENT(hash), EXPIRY, BYTES, SIZES]) {
        const ttl = await redis.ttl(key);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(120);
      }
    });

    it('stores nothing under a hash that is not the document’s', async () => {
      const wrong = sha256('{ __typename }');
      const { status, body } = await post(a, { query: second, extensions: apq(wrong) });
      expect(status).toBe(400);
      expect(codeOf(body)).toBe('BAD_USER_INPUT');
      expect(await redis.exists(DOCUMENT(wrong))).toBe(0);
    });

    it('shares documents with a facade process started with REDIS_URL', async () => {
      // A deadline a loaded test machine cannot miss: what is tested here is the sharing.
      // No kept ranges in Redis: the start-up line names only what is shared.
      const facade = await startFacade({
        REDIS_URL: redisUrl,
        REDIS_TIMEOUT_MS: '2000',
        RANGE_CACHE_REDIS_BYTES: '0',
      });
      try {
        await expect
          .poll(() => facade.lines.some((line) => line.store === 'redis'), { timeout: 5_000 })
          .toBe(true);
        expect(facade.lines.find((line) => line.store === 'redis')?.msg).toMatch(
          /^Rate limits, APQ documents and answers shared in Redis at redis:\/\/127\.0\.0\.1:\d+ \(keys graphql-facade:\*\); Redis answered$/,
        );
        const third = '{ repositories(limit: 3) { total } }';
        const response = await fetch(facade.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: third, extensions: apq(sha256(third)) }),
        });
        expect(((await response.json()) as Body).errors).toBeUndefined();
        const { body } = await getByHash(b, sha256(third));
        expect(body.errors).toBeUndefined();
        expect(body.data?.repositories).toMatchObject({ total: expect.any(Number) });
      } finally {
        await facade.stop();
      }
    }, 60_000);

    it('falls back to memory, never to a failure, when Redis is gone', async () => {
      // Stored in Redis and in b's memory only.
      const onlyOnB = sha256(second);
      expect((await post(b, { query: second, extensions: apq(onlyOnB) })).body.errors).toBe(
        undefined,
      );
      redisProcess?.kill('SIGKILL');
      await new Promise((resolve) =>
        redisProcess?.exitCode === null ? redisProcess.once('exit', resolve) : resolve(null),
      );
      await expect
        .poll(() => connections.every((connection) => connection.client.status !== 'ready'))
        .toBe(true);

      // What a replica has in memory still answers.
      const known = await getByHash(a, sha256(first));
      expect(known.body.errors).toBeUndefined();
      expect((await getByHash(b, onlyOnB)).body.errors).toBeUndefined();
      // What it does not: PERSISTED_QUERY_NOT_FOUND, so the client sends the document again.
      const missing = await getByHash(a, onlyOnB);
      expect(missing.status).toBe(200);
      expect(codeOf(missing.body)).toBe('PERSISTED_QUERY_NOT_FOUND');
      // Which then runs and is kept in memory.
      const resent = await post(a, { query: second, extensions: apq(onlyOnB) });
      expect(resent.body.errors).toBeUndefined();
      expect(resent.body.data?.repositories).toMatchObject({ total: expect.any(Number) });
      expect((await getByHash(a, onlyOnB)).body.errors).toBeUndefined();
    });
  });
});

describe('APQ in Redis beside the rate limit', () => {
  describe.skipIf(!hasRedis)('with a real redis-server that evicts any key when full', () => {
    const h = useHarness();
    let redisProcess: ChildProcess | undefined;
    let connection: RedisConnection;
    let redis: Redis;
    // APQ's bound far under Redis's maxmemory, as docs/operations.md asks.
    const maxBytes = 256 * 1024;

    beforeAll(async () => {
      // The policy that let a flood of APQ documents evict the rate limit's counters.
      const started = await startRedis([
        '--maxmemory',
        '48mb',
        '--maxmemory-policy',
        'allkeys-lru',
      ]);
      redisProcess = started.process;
      connection = await connected(started.url);
      redis = await inspector(started.url);
    }, 30_000);

    afterAll(async () => {
      connection?.disconnect();
      redis?.disconnect();
      await stopRedis(redisProcess);
    });

    /** A caller's budget, in Redis on the same connection as APQ, five points of it spent. */
    async function spentBudget() {
      const limiter = await createRateLimiter(
        { points: 100, windowS: 600, redisUrl: 'redis://unused' },
        undefined,
        false,
        connection,
      );
      const caller = `caller-${Math.random()}`;
      expect((await limiter?.consume(caller, 5))?.retryAfter).toBeUndefined();
      return { key: `graphql-facade:rl:${caller}`, points: '5' };
    }

    it('stores nothing of a flood of text that is not GraphQL sent with its hashes', async () => {
      const budget = await spentBudget();
      const app = h.createApp({
        apqStore: createRedisApqStore(connection, { ttlS: 86_400, maxBytes, memoryBytes: 0 }),
      });
      const before = await usedMemory(redis);
      // Just under MAX_BODY_BYTES each, more than maxmemory in all.
      for (let i = 0; i < 60; i++) {
        const junk = `not GraphQL ${i} `.padEnd(1_040_000, 'x');
        const { body } = await post(app, { query: junk, extensions: apq(sha256(junk)) });
        expect(codeOf(body)).toBe('GRAPHQL_PARSE_FAILED');
      }
      expect(await redis.keys('graphql-facade:{apq}*')).toEqual([]);
      expect((await usedMemory(redis)) - before).toBeLessThan(1024 * 1024);
      expect(await redis.get(budget.key)).toBe(budget.points);
    }, 60_000);

    it('evicts its own least recently used documents past its bound, never the counters', async () => {
      const budget = await spentBudget();
      // Two replicas with no memory in front: every read reaches Redis.
      const options = { ttlS: 86_400, maxBytes, memoryBytes: 0 };
      const a = h.createApp({ apqStore: createRedisApqStore(connection, options) });
      const b = h.createApp({ apqStore: createRedisApqStore(connection, options) });
      const document = (i: number) =>
        `query Padded${i} { repositories(limit: 1) { total } }`.padEnd(16 * 1024, ' ');
      const register = async (app: App, i: number) => {
        const text = document(i);
        const { body } = await post(app, { query: text, extensions: apq(sha256(text)) });
        expect(body.errors).toBeUndefined();
      };
      const stored = async (i: number) => (await redis.exists(DOCUMENT(sha256(document(i))))) === 1;

      // Fifteen fit in the bound; the sixteenth evicts the least recently used.
      for (let i = 0; i < 15; i++) await register(a, i);
      await expect.poll(() => stored(14)).toBe(true);
      // A read through Redis refreshes the first, so the second is now the oldest.
      expect((await getByHash(b, sha256(document(0)))).body.errors).toBeUndefined();
      await register(b, 15);
      await expect.poll(() => stored(15)).toBe(true);
      expect(await stored(0)).toBe(true);
      expect(await stored(1)).toBe(false);
      expect(codeOf((await getByHash(a, sha256(document(1)))).body)).toBe(
        'PERSISTED_QUERY_NOT_FOUND',
      );

      for (let i = 16; i < 60; i++) await register(i % 2 ? a : b, i);
      await expect.poll(() => stored(59)).toBe(true);
      // The total counts what is stored (texts, hashes and an allowance for each), within the bound.
      const total = Number(await redis.get(BYTES));
      expect(total).toBeLessThanOrEqual(maxBytes);
      expect(total).toBeGreaterThan(maxBytes - 2 * 16 * 1024);
      const hashes = await storedHashes(redis);
      expect(await redis.zcard(EXPIRY)).toBe(hashes.length);
      let texts = 0;
      for (const hash of hashes) texts += (await redis.strlen(DOCUMENT(hash))) + hash.length;
      expect(total).toBeGreaterThan(texts);
      expect(await redis.get(budget.key)).toBe(budget.points);
    });

    // APQ_REDIS_BYTES promises Redis's memory, whatever the documents look like: each shape is
    // written past twice what the bound holds.
    it.each([
      { shape: 'tiny documents', count: 30_000, size: 8 },
      { shape: 'documents of 1 kB', count: 9_000, size: 1_000 },
      { shape: 'documents of 64 kB', count: 130, size: 64 * 1024 - 100 },
    ])(
      'grows Redis by its bound within 1.5 times: $shape',
      async ({ count, size }) => {
        const bound = 4 * 1024 * 1024;
        const store = createRedisApqStore(connection, {
          ttlS: 600,
          maxBytes: bound,
          memoryBytes: 0,
        });
        await store.set(sha256('{ warm }'), '{ warm }');
        await clearApq(redis);
        const before = await usedMemory(redis);
        for (let i = 0; i < count; i += 250) {
          const batch: Array<void | Promise<void>> = [];
          for (let j = i; j < Math.min(count, i + 250); j++) {
            const document = `{ q${j} }`.padEnd(size, ' ');
            batch.push(store.set(sha256(document), document));
          }
          await Promise.all(batch);
        }
        const grown = (await usedMemory(redis)) - before;
        expect(grown).toBeGreaterThan(bound / 1.5);
        expect(grown).toBeLessThan(bound * 1.5);
        await clearApq(redis);
      },
      60_000,
    );

    it('stops counting a document once it has expired, and no longer answers with it', async () => {
      const store = createRedisApqStore(connection, { ttlS: 1, maxBytes, memoryBytes: 0 });
      await clearApq(redis);
      const documents = ['{ a }', '{ bb }', '{ ccc }'];
      const [first, second, third] = documents.map((text) => sha256(text)) as [
        string,
        string,
        string,
      ];
      await store.set(first, '{ a }');
      const cost = Number(await redis.get(BYTES));
      await sleep(600);
      // Keeps APQ's keys alive past the first document's expiry.
      await store.set(second, '{ bb }');
      await sleep(600);
      expect(await store.get(first)).toBeNull();
      expect(await store.get(second)).toBe('{ bb }');
      await store.set(third, '{ ccc }');
      expect(Number(await redis.get(BYTES))).toBe(cost + 1 + cost + 2);
      expect((await storedHashes(redis)).sort()).toEqual([second, third].sort());
    });
  });
});
