import type { ChildProcess } from 'node:child_process';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { RedisConnection } from '../../src/redis.js';
import { connected, inspector, startRedis, stopRedis } from './redis.js';

// Apart from ./redis.js, which bench/fleet.ts also loads outside vitest.

/** One redis-server for a describe block, with what its tests reach it by. */
export interface RedisServerUnderTest {
  url: string;
  /** The facade's own connection to it. */
  redis: RedisConnection;
  /** A plain client to look into it. */
  look: Redis;
}

/**
 * A redis-server started before the enclosing describe block's tests, emptied before each of
 * them, and stopped after them all. Its fields are set once the block's tests run.
 */
export function useRedisServer(): RedisServerUnderTest {
  const server: Partial<RedisServerUnderTest> = {};
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    const started = await startRedis();
    child = started.process;
    server.url = started.url;
    server.redis = await connected(started.url);
    server.look = await inspector(started.url);
  }, 30_000);
  afterAll(async () => {
    server.redis?.disconnect();
    server.look?.disconnect();
    await stopRedis(child);
  });
  beforeEach(async () => {
    await server.look?.flushall();
  });
  return server as RedisServerUnderTest;
}
