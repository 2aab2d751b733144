// Counted by rate-limiter-flexible in memory or Redis; a store that fails never refuses a request
// (docs/operations.md#rate-limits). Its insuranceLimiter would still call a skipped Redis, and it
// has no RateLimit headers nor IPv6 /64 keys: those three are the facade's own.
import { isIP } from 'node:net';
import type { Plugin } from 'graphql-yoga';
import {
  type RateLimiterAbstract,
  RateLimiterCluster,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { Config } from '../config/load.js';
import { REDIS_TIMEOUT_MS } from '../config/variables.js';
import type { Context, ServerContext } from '../context.js';
import { bearerToken, tokenId } from '../credentials.js';
import { FacadeError } from '../errors.js';
import { connectRedis, type RedisConnection } from '../redis.js';
import { type RateLimitState, type RequestStateCarrier, requestState } from '../request-state.js';
import type { Logger } from '../telemetry/logger.js';

export interface Consumed {
  /** Seconds until the request would be allowed; undefined when it is. */
  retryAfter: number | undefined;
  /** The store's answer; undefined when none answered. */
  res: RateLimiterRes | undefined;
}

export interface RateLimiter {
  readonly store: 'memory' | 'redis';
  readonly quota: Quota;
  consume(key: string, points?: number): Promise<Consumed>;
  /** The address's ceiling, which holds whatever tokens its requests carry. */
  consumeAddress(address: string, points?: number): Promise<Consumed>;
  /** True once the store can be used (Redis connected), false after `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** RATE_LIMIT_POINTS, RATE_LIMIT_ADDRESS_POINTS (0: no ceiling) and their window. */
export interface Quota {
  points: number;
  addressPoints: number;
  windowS: number;
}

// After REDIS_KEY_PREFIX, which ioredis adds; one key per counter, so any Cluster slot will do.
const KEY_PREFIX = 'rl';
const ADDRESS_PREFIX = 'rl-address';
// How long a worker waits for the primary's counters before it lets the request through.
const CLUSTER_TIMEOUT_MS = 1_000;

type Limits = Pick<Config['rateLimit'], 'points' | 'windowS' | 'redisUrl'> &
  Partial<Pick<Config['rateLimit'], 'addressPoints' | 'redisTimeoutMs' | 'redisKeyPrefix'>>;

type Budget = (key: string, points: number) => Promise<Consumed>;

const ALLOWED: Consumed = { retryAfter: undefined, res: undefined };

/** A limiter's refusal is an answer too; anything else is thrown. */
function settle(attempt: Promise<RateLimiterRes>): Promise<Consumed> {
  return attempt.then(
    (res) => ({ retryAfter: undefined, res }),
    (rejection: unknown) => {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      return { retryAfter: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)), res: rejection };
    },
  );
}

/** Undefined when RATE_LIMIT_POINTS is 0. */
export async function createRateLimiter(
  options: Limits,
  logger?: Logger,
  /** In a cluster worker: the primary keeps the memory counters for every worker. */
  inCluster = false,
  /** The process's Redis connection; without one, a connection of its own. */
  sharedRedis?: RedisConnection,
): Promise<RateLimiter | undefined> {
  if (options.points === 0) return undefined;
  const quota: Quota = {
    points: options.points,
    addressPoints: options.addressPoints ?? options.points,
    windowS: options.windowS,
  };
  const redis = !options.redisUrl
    ? undefined
    : (sharedRedis ??
      (await connectRedis(options.redisUrl, {
        timeoutMs: options.redisTimeoutMs ?? REDIS_TIMEOUT_MS,
        keyPrefix: options.redisKeyPrefix,
        logger,
      })));
  const budget = (keyPrefix: string, points: number): Budget => {
    const limits = { points, duration: options.windowS, keyPrefix };
    const memory: RateLimiterAbstract = inCluster
      ? new RateLimiterCluster({ ...limits, timeoutMs: CLUSTER_TIMEOUT_MS })
      : new RateLimiterMemory(limits);
    const inMemory: Budget = (key, points) =>
      settle(memory.consume(key, points)).catch((error: unknown) => {
        logger?.error({ err: error }, 'rate limit check failed; request allowed');
        return ALLOWED;
      });
    if (!redis) return inMemory;
    // Memory counts what Redis does not answer.
    const shared = new RateLimiterRedis({ ...limits, storeClient: redis.client });
    return (key, points) =>
      redis.run(() => settle(shared.consume(key, points))).catch(() => inMemory(key, points));
  };
  const client = budget(KEY_PREFIX, quota.points);
  const address =
    quota.addressPoints === 0 ? undefined : budget(ADDRESS_PREFIX, quota.addressPoints);
  return {
    store: redis ? 'redis' : 'memory',
    quota,
    consume: (key, points = 1) => client(key, points),
    consumeAddress: (key, points = 1) =>
      address ? address(key, points) : Promise.resolve(ALLOWED),
    ready: (timeoutMs) => (redis ? redis.ready(timeoutMs) : Promise.resolve(true)),
    // A shared connection is closed by its owner.
    close: async () => {
      if (redis && !sharedRedis) redis.disconnect();
    },
  };
}

export interface ClientKeyOptions {
  /** Take the client's address from the last X-Forwarded-For entry (one trusted proxy hop). */
  trustProxy: boolean;
  /** In service-key mode only accepted tokens get their own budget; others count by address. */
  isAccepted?: ((token: string | undefined) => boolean) | undefined;
}

export interface ClientKeys {
  /** The hashed bearer token if any, else the address: raw tokens are never stored. */
  client: string;
  /** Set unless the token is a verified identity (service-key mode's CLIENT_TOKENS). */
  address: string | undefined;
}

export function clientKeys(
  request: Request,
  serverContext: unknown,
  options: ClientKeyOptions,
): ClientKeys {
  const address = clientAddress(request, serverContext, options.trustProxy);
  const token = bearerToken(request.headers.get('authorization'));
  if (token === undefined || (options.isAccepted && !options.isAccepted(token)))
    return { client: `ip:${address}`, address };
  return { client: `t:${tokenId(token)}`, address: options.isAccepted ? undefined : address };
}

function clientAddress(request: Request, serverContext: unknown, trustProxy: boolean): string {
  // node:http hands Yoga `{ req, res }` as the server context.
  const req = (serverContext as { req?: { socket?: { remoteAddress?: string } } } | undefined)?.req;
  const socket = addressKey(req?.socket?.remoteAddress) ?? 'unknown';
  if (!trustProxy) return socket;
  // An entry that is not an address was not written by the trusted proxy.
  const forwarded = request.headers.get('x-forwarded-for')?.split(',').at(-1);
  return addressKey(forwarded) ?? socket;
}

/**
 * An IPv4 address as such (also IPv4-mapped or with a port), an IPv6 address by its /64;
 * undefined for anything else (docs/operations.md#rate-limits).
 */
export function addressKey(raw: string | undefined): string | undefined {
  let address = raw?.trim() ?? '';
  const withPort = /^(?:\[([^\]]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):\d{1,5}$/.exec(address);
  if (withPort) address = withPort[1] ?? withPort[2] ?? '';
  address = address.replace(/%.*$/, '').toLowerCase();
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(address);
  if (mapped?.[1]) address = mapped[1];
  const version = isIP(address);
  if (version === 4) return address;
  if (version !== 6) return undefined;
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address, in lower-case hex without leading zeros. */
function expandIPv6(address: string): string[] {
  // A trailing dotted quad (64:ff9b::1.2.3.4) is two groups.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  const group = (high?: string, low?: string) => ((Number(high) << 8) | Number(low)).toString(16);
  const hex = dotted
    ? `${address.slice(0, dotted.index)}${group(dotted[1], dotted[2])}:${group(dotted[3], dotted[4])}`
    : address;
  const [head = '', tail] = hex.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => Number.parseInt(group, 16).toString(16));
}

/**
 * One point per HTTP request before its body is read, one more per extra operation of a batch
 * once parsed (none for a batch BATCHING_LIMIT refuses); the address pays too unless the token is verified, since anyone can invent tokens.
 */
export function useRateLimit(
  limiter: RateLimiter,
  options: ClientKeyOptions & {
    /** BATCHING_LIMIT: a longer batch (any, at 0) is refused after this stage, and not charged. */
    batchingLimit: number;
  },
): Plugin<Context, ServerContext> {
  const { quota } = limiter;
  const take = (carrier: RequestStateCarrier, keys: ClientKeys, points: number): Promise<void> => {
    const client = limiter.consume(keys.client, points);
    const address =
      keys.address === undefined ? undefined : limiter.consumeAddress(keys.address, points);
    return Promise.all([client, address]).then(([forClient, forAddress]) => {
      requestState(carrier).rateLimit = {
        policies: [
          policyState('client', quota.points, quota.windowS, forClient),
          ...(forAddress && quota.addressPoints > 0
            ? [policyState('address', quota.addressPoints, quota.windowS, forAddress)]
            : []),
        ],
      };
      const wait = Math.max(forClient.retryAfter ?? 0, forAddress?.retryAfter ?? 0);
      if (wait > 0) {
        throw new FacadeError('RATE_LIMITED', `Too many requests; retry in ${wait} s`, {
          retryAfter: wait,
          http: { status: 429, headers: { 'Retry-After': String(wait) } },
        });
      }
    });
  };
  return {
    // Chained, not awaited: a request waits for the counters' answer and nothing else.
    onRequestParse({ request, serverContext }) {
      const keys = clientKeys(request, serverContext, options);
      return take(serverContext, keys, 1).then(() => ({
        onRequestParseDone({ requestParserResult }) {
          if (!Array.isArray(requestParserResult)) return;
          const operations = requestParserResult.length;
          if (operations < 2 || operations > options.batchingLimit) return;
          return take(serverContext, keys, operations - 1);
        },
      }));
    },
    // Every answer it counted, a 429 included, states the budgets it counted against.
    onResponse({ response, serverContext }) {
      const counted = requestState(serverContext).rateLimit;
      if (!counted) return;
      const { headers } = response;
      headers.set('ratelimit-policy', counted.policies.map(policyField).join(', '));
      headers.set('ratelimit', counted.policies.map(remainingField).join(', '));
    },
  };
}

function policyState(name: string, quota: number, windowS: number, { res }: Consumed) {
  return {
    name,
    quota,
    windowS,
    remaining: Math.max(0, res?.remainingPoints ?? quota),
    resetS: Math.max(0, Math.ceil((res?.msBeforeNext ?? windowS * 1000) / 1000)),
  };
}

// draft-ietf-httpapi-ratelimit-headers: a List of policies, each a String with parameters.
const policyField = (policy: RateLimitState['policies'][number]) =>
  `"${policy.name}";q=${policy.quota};w=${policy.windowS}`;
const remainingField = (policy: RateLimitState['policies'][number]) =>
  `"${policy.name}";r=${policy.remaining};t=${policy.resetS}`;
