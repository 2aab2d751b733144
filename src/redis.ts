import type { Redis } from 'ioredis';
import type { Logger } from './telemetry/logger.js';

/**
 * The one Redis connection of a process (REDIS_URL), shared by the rate limit, the APQ store and
 * the response cache.
 * No offline queue and one retry: while Redis is away, calls fail at once and each user falls
 * back to memory, instead of requests queueing behind a dead connection.
 */
export async function connectRedis(url: string, logger?: Logger): Promise<Redis> {
  // Loaded only when used: the Redis client is resident memory a memory-only replica never needs.
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  redis.on('error', (error: Error) => logger?.warn({ err: error }, 'Redis error'));
  return redis;
}
