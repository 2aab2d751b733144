import { createRedisResponseStore } from '../../src/cache/redis-store.js';
import type { RedisConnection } from '../../src/redis.js';
import { createRedisApqStore } from '../../src/security/use-apq.js';
import { createRateLimiter, type RateLimiter } from '../../src/security/use-rate-limit.js';
import type { Harness } from './harness.js';

export type App = ReturnType<Harness['createApp']>;

/**
 * An app as serve.ts builds one over its own Redis connection: the rate limit (`points` a minute
 * per client), APQ and the response cache all in Redis, none kept in memory.
 */
export async function redisReplica(
  h: Harness,
  connection: RedisConnection,
  points: number,
): Promise<App> {
  const rateLimiter = (await createRateLimiter(
    { points, windowS: 60, addressPoints: 0, redisUrl: 'redis://unused' },
    undefined,
    false,
    connection,
  )) as RateLimiter;
  return h.createApp({
    rateLimiter,
    apqStore: createRedisApqStore(connection, { ttlS: 600, maxBytes: 1 << 20, memoryBytes: 0 }),
    responseStore: createRedisResponseStore(connection, { redisBytes: 4 << 20, memoryBytes: 0 }),
  });
}
