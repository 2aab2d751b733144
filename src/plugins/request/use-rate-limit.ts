import type { Plugin } from 'graphql-yoga';
import type { Redis } from 'ioredis';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { Config } from '../../config.js';
import { FacadeError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import { bearerToken, tokenId } from './bearer-token.js';

export interface RateLimiter {
  readonly store: 'memory' | 'redis';
  /** Takes `points` from the key's budget: undefined when allowed, else seconds until allowed. */
  consume(key: string, points?: number): Promise<number | undefined>;
  /** Resolves true once the store can be used (Redis connected), false after `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

const KEY_PREFIX = 'graphql-facade:rl';

/**
 * Undefined when RATE_LIMIT_POINTS is 0. With REDIS_URL the counters live in Redis, shared by
 * every replica; if Redis is unreachable each replica falls back to its own memory counters
 * (an "insurance" limiter) rather than refusing or waving everyone through.
 */
export async function createRateLimiter(
  options: Pick<Config['rateLimit'], 'points' | 'windowS' | 'redisUrl'>,
  logger?: Logger,
): Promise<RateLimiter | undefined> {
  if (options.points === 0) return undefined;
  const limits = { points: options.points, duration: options.windowS, keyPrefix: KEY_PREFIX };
  const memory = new RateLimiterMemory(limits);
  if (!options.redisUrl) return wrap('memory', memory, async () => {}, logger);

  // Loaded only when used: the Redis client is resident memory that a memory-store replica
  // never needs.
  const { Redis } = await import('ioredis');
  // No offline queue: while Redis is away, calls fail at once and the insurance limiter answers,
  // instead of requests queueing behind a dead connection.
  const redis = new Redis(options.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  redis.on('error', (error: Error) =>
    logger?.warn({ err: error }, 'rate limit store (Redis) error'),
  );
  const limiter = new RateLimiterRedis({ ...limits, storeClient: redis, insuranceLimiter: memory });
  return wrap(
    'redis',
    limiter,
    async () => {
      redis.disconnect();
    },
    logger,
    redis,
  );
}

function wrap(
  store: 'memory' | 'redis',
  limiter: RateLimiterAbstract,
  close: () => Promise<void>,
  logger: Logger | undefined,
  redis?: Redis,
): RateLimiter {
  return {
    store,
    async consume(key, points = 1) {
      try {
        await limiter.consume(key, points);
        return undefined;
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes)
          return Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        // Neither store answered: better to serve than to take the service down with the store.
        logger?.error({ err: rejection }, 'rate limit check failed; request allowed');
        return undefined;
      }
    },
    close,
    ready(timeoutMs) {
      if (!redis || redis.status === 'ready') return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        redis.once('ready', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
  };
}

export interface ClientKeyOptions {
  /** Take the client's address from the last X-Forwarded-For entry (one trusted proxy hop). */
  trustProxy: boolean;
  /** In service-key mode only accepted tokens get their own budget; others count by address. */
  isAccepted?: ((token: string | undefined) => boolean) | undefined;
}

/** The bearer token (hashed: raw tokens are never stored) if any, else the client's address. */
export function clientKey(
  request: Request,
  serverContext: unknown,
  options: ClientKeyOptions,
): string {
  const token = bearerToken(request.headers.get('authorization'));
  if (token !== undefined && (!options.isAccepted || options.isAccepted(token)))
    return `t:${tokenId(token)}`;
  return `ip:${clientAddress(request, serverContext, options.trustProxy)}`;
}

function clientAddress(request: Request, serverContext: unknown, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim();
    if (forwarded) return forwarded;
  }
  // node:http hands Yoga `{ req, res }` as the server context.
  const req = (serverContext as { req?: { socket?: { remoteAddress?: string } } } | undefined)?.req;
  return req?.socket?.remoteAddress ?? 'unknown';
}

function rateLimited(retryAfter: number): FacadeError {
  return new FacadeError('RATE_LIMITED', `Too many requests; retry in ${retryAfter} s`, {
    retryAfter,
    http: { status: 429, headers: { 'Retry-After': String(retryAfter) } },
  });
}

/**
 * One point per HTTP request, taken before its body is read; a batch pays for its other
 * operations once parsed. Runs before any execution, so a refused request costs no upstream call.
 */
export function useRateLimit(limiter: RateLimiter, options: ClientKeyOptions): Plugin {
  return {
    async onRequestParse({ request, serverContext }) {
      const key = clientKey(request, serverContext, options);
      const wait = await limiter.consume(key);
      if (wait !== undefined) throw rateLimited(wait);
      return {
        async onRequestParseDone({ requestParserResult }) {
          if (!Array.isArray(requestParserResult) || requestParserResult.length < 2) return;
          const more = await limiter.consume(key, requestParserResult.length - 1);
          if (more !== undefined) throw rateLimited(more);
        },
      };
    },
  };
}
