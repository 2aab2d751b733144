import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisApqStore } from '../../src/plugins/request/use-apq.js';
import { connectRedis } from '../../src/redis.js';
import { useHarness } from '../helpers/harness.js';
import { freePort, waitForPort } from '../helpers/net.js';
import { startFacade } from '../helpers/process.js';
import { hasRedis } from '../helpers/redis.js';

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

describe('APQ documents in Redis, shared by two replicas', () => {
  it.runIf(!hasRedis && process.env.CI === 'true')('needs redis-server in CI', () => {
    expect.fail('redis-server is not installed: .ci/run installs Debian\'s "redis-server"');
  });

  describe.skipIf(!hasRedis)('with a real redis-server', () => {
    const h = useHarness();
    let redisProcess: ChildProcess | undefined;
    // One connection per replica, as each facade process has its own.
    const connections: Redis[] = [];
    let a: App;
    let b: App;
    let redisUrl: string;

    beforeAll(async () => {
      const port = await freePort();
      redisProcess = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { stdio: 'ignore' },
      );
      await waitForPort(port);
      redisUrl = `redis://127.0.0.1:${port}`;
      connections.push(await connectRedis(redisUrl), await connectRedis(redisUrl));
      const [first, second] = connections as [Redis, Redis];
      // No offline queue: a command before the connection is ready fails (and falls back).
      await Promise.all(
        connections.map((c) => (c.status === 'ready' ? undefined : once(c, 'ready'))),
      );
      const options = { ttlS: 120, memoryBytes: 1024 * 1024 };
      a = h.createApp({ apqStore: createRedisApqStore(first, options) });
      b = h.createApp({ apqStore: createRedisApqStore(second, options) });
    }, 30_000);

    afterAll(async () => {
      for (const connection of connections) connection.disconnect();
      if (redisProcess && redisProcess.exitCode === null) {
        redisProcess.kill('SIGKILL');
        await Promise.race([
          new Promise((resolve) => redisProcess?.once('exit', resolve)),
          sleep(5_000),
        ]);
      }
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
      const redis = connections[0] as Redis;
      const key = `graphql-facade:apq:${hash}`;
      expect(await redis.get(key)).toBe(first);
      const ttl = await redis.ttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(120);
    });

    it('stores nothing under a hash that is not the document’s', async () => {
      const wrong = sha256('{ __typename }');
      const { status, body } = await post(a, { query: second, extensions: apq(wrong) });
      expect(status).toBe(400);
      expect(codeOf(body)).toBe('BAD_USER_INPUT');
      expect(await (connections[0] as Redis).get(`graphql-facade:apq:${wrong}`)).toBeNull();
    });

    it('shares documents with a facade process started with REDIS_URL', async () => {
      const facade = await startFacade({ REDIS_URL: redisUrl });
      try {
        await expect
          .poll(() => facade.lines.some((line) => line.store === 'redis'), { timeout: 5_000 })
          .toBe(true);
        expect(facade.lines.find((line) => line.store === 'redis')?.msg).toMatch(
          /^Rate limits and APQ documents shared in Redis/,
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
        .poll(() => connections.every((connection) => connection.status !== 'ready'))
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
