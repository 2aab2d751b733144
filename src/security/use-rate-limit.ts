import { isIP } from 'node:net';
import type { Plugin } from 'graphql-yoga';
import {
  type RateLimiterAbstract,
  RateLimiterCluster,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { REDIS_TIMEOUT_MS } from '../config/variables.js';
import type { Config } from '../config.js';
import type { Context, ServerContext } from '../context.js';
import { bearerToken, tokenId } from '../credentials.js';
import { FacadeError } from '../errors.js';
import { connectRedis, type RedisConnection } from '../redis.js';
import { type RateLimitState, type RequestStateCarrier, requestState } from '../request-state.js';
import type { Logger } from '../telemetry/logger.js';

/** What a budget says of a request. */
export interface Consumed {
  /** Seconds until the request would be allowed; undefined when it is. */
  retryAfter: number | undefined;
  /** The store's answer (points left, ms until the window resets); undefined when none answered. */
  res: RateLimiterRes | undefined;
}

export interface RateLimiter {
  readonly store: 'memory' | 'redis';
  /** The budgets' sizes, as the RateLimit-Policy header states them. */
  readonly quota: Quota;
  /** Takes `points` from a client's budget. */
  consume(key: string, points?: number): Promise<Consumed>;
  /** The same from an address's ceiling, which holds whatever tokens its requests carry. */
  consumeAddress(address: string, points?: number): Promise<Consumed>;
  /** Resolves true once the store can be used (Redis connected), false after `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

const KEY_PREFIX = 'graphql-facade:rl';
// How long a worker waits for the primary's counters before it lets the request through.
const CLUSTER_TIMEOUT_MS = 1_000;
const ADDRESS_PREFIX = 'graphql-facade:rl-address';

type Limits = Pick<Config['rateLimit'], 'points' | 'windowS' | 'redisUrl'> &
  Partial<Pick<Config['rateLimit'], 'addressPoints' | 'redisTimeoutMs'>>;

type Budget = (key: string, points: number) => Promise<Consumed>;

const ALLOWED: Consumed = { retryAfter: undefined, res: undefined };

/** A limiter's answer as a budget's: its refusal is an answer too, anything else is thrown. */
function settle(attempt: Promise<RateLimiterRes>): Promise<Consumed> {
  return attempt.then(
    (res) => ({ retryAfter: undefined, res }),
    (rejection: unknown) => {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      return { retryAfter: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)), res: rejection };
    },
  );
}

/**
 * Undefined when RATE_LIMIT_POINTS is 0. With REDIS_URL the counters live in Redis, shared by
 * every replica; while Redis fails, times out or is skipped (src/redis.ts) each replica counts in
 * its own memory rather than refusing or waving everyone through.
 */
export async function createRateLimiter(
  options: Limits,
  logger?: Logger,
  /** In a cluster worker: memory counters are kept by the primary, shared by every worker. */
  inCluster = false,
  /** The process's Redis connection (src/redis.ts); without one, a connection of its own. */
  sharedRedis?: RedisConnection,
): Promise<RateLimiter | undefined> {
  if (options.points === 0) return undefined;
  const budgets = {
    client: { points: options.points, duration: options.windowS, keyPrefix: KEY_PREFIX },
    address: {
      points: options.addressPoints ?? options.points,
      duration: options.windowS,
      keyPrefix: ADDRESS_PREFIX,
    },
  };
  const noCeiling = budgets.address.points === 0;
  const quota: Quota = {
    points: options.points,
    addressPoints: budgets.address.points,
    windowS: options.windowS,
  };
  const inMemory = (limits: typeof budgets.client): Budget => {
    const limiter: RateLimiterAbstract = inCluster
      ? new RateLimiterCluster({ ...limits, timeoutMs: CLUSTER_TIMEOUT_MS })
      : new RateLimiterMemory(limits);
    return (key, points) =>
      settle(limiter.consume(key, points)).catch((error: unknown) => {
        // No store answered: better to serve than to take the service down with the store.
        logger?.error({ err: error }, 'rate limit check failed; request allowed');
        return ALLOWED;
      });
  };
  if (!options.redisUrl) {
    return wrap({
      store: 'memory',
      quota,
      client: inMemory(budgets.client),
      address: noCeiling ? undefined : inMemory(budgets.address),
      close: async () => {},
    });
  }

  const redis =
    sharedRedis ??
    (await connectRedis(options.redisUrl, {
      timeoutMs: options.redisTimeoutMs ?? REDIS_TIMEOUT_MS,
      logger,
    }));
  // Memory counters count what Redis does not answer, as rate-limiter-flexible's insurance limiter
  // would, but without sending Redis a command while it is skipped.
  const inRedis = (limits: typeof budgets.client): Budget => {
    const limiter = new RateLimiterRedis({ ...limits, storeClient: redis.client });
    const fallback = inMemory(limits);
    return (key, points) =>
      redis.run(() => settle(limiter.consume(key, points))).catch(() => fallback(key, points));
  };
  return wrap({
    store: 'redis',
    quota,
    client: inRedis(budgets.client),
    address: noCeiling ? undefined : inRedis(budgets.address),
    // A shared connection is closed by its owner.
    close: async () => {
      if (!sharedRedis) redis.disconnect();
    },
    redis,
  });
}

interface Stores {
  store: 'memory' | 'redis';
  quota: Quota;
  client: Budget;
  address: Budget | undefined;
  close: () => Promise<void>;
  redis?: RedisConnection;
}

function wrap({ store, quota, client, address, close, redis }: Stores): RateLimiter {
  return {
    store,
    quota,
    consume: (key, points = 1) => client(key, points),
    consumeAddress: (key, points = 1) =>
      address ? address(key, points) : Promise.resolve(ALLOWED),
    close,
    ready(timeoutMs) {
      const connection = redis?.client;
      if (!connection || connection.status === 'ready') return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        connection.once('ready', () => {
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

/** Who a request counts as: its client key, and its address when that ceiling applies too. */
export interface ClientKeys {
  /** The bearer token (hashed: raw tokens are never stored) if any, else the address. */
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
  // An entry that is not an address was not written by the trusted proxy: a client that reaches
  // the facade around it could otherwise name itself anew on every request.
  const forwarded = request.headers.get('x-forwarded-for')?.split(',').at(-1);
  return addressKey(forwarded) ?? socket;
}

/**
 * The key an address counts under: an IPv4 address as such (also when IPv4-mapped, or with a
 * port as some proxies append one), an IPv6 address by its /64, since one subscriber holds a whole
 * /64 and could otherwise take a fresh address for every request. Undefined for anything else.
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
  // A trailing dotted quad (::ffff:1.2.3.4 is handled before; 64:ff9b::1.2.3.4 is not) is two groups.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  const hex = dotted
    ? `${address.slice(0, dotted.index)}${((Number(dotted[1]) << 8) | Number(dotted[2])).toString(16)}:${((Number(dotted[3]) << 8) | Number(dotted[4])).toString(16)}`
    : address;
  const [head = '', tail] = hex.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = Array<string>(8 - left.length - right.length).fill('0');
  // Without '::' a valid address has its eight groups already, and `zeros` is empty.
  return [...left, ...zeros, ...right].map((group) => Number.parseInt(group, 16).toString(16));
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
 * A request pays its client's budget and, unless its token is verified, its address's ceiling:
 * in forwarding mode anyone can invent tokens, so a token alone cannot be the key.
 */
export function useRateLimit(
  limiter: RateLimiter,
  options: ClientKeyOptions,
): Plugin<Context, ServerContext> {
  const { quota } = limiter;
  const take = (carrier: RequestStateCarrier, keys: ClientKeys, points: number): Promise<void> => {
    const client = limiter.consume(keys.client, points);
    const address =
      keys.address === undefined ? undefined : limiter.consumeAddress(keys.address, points);
    return Promise.all([client, address]).then(([forClient, forAddress]) => {
      const state = requestState(carrier);
      state.rateLimit = {
        policies: [
          policyState('client', quota.points, quota.windowS, forClient),
          ...(forAddress && quota.addressPoints > 0
            ? [policyState('address', quota.addressPoints, quota.windowS, forAddress)]
            : []),
        ],
      };
      const wait = Math.max(forClient.retryAfter ?? 0, forAddress?.retryAfter ?? 0);
      if (wait > 0) throw rateLimited(wait);
    });
  };
  return {
    // Promises chained, not awaited: a request waits for the counters' answer and nothing else.
    onRequestParse({ request, serverContext }) {
      const keys = clientKeys(request, serverContext, options);
      return take(serverContext, keys, 1).then(() => ({
        onRequestParseDone({ requestParserResult }) {
          // A batch pays for its other operations; a single request has paid already.
          if (!Array.isArray(requestParserResult) || requestParserResult.length < 2) return;
          return take(serverContext, keys, requestParserResult.length - 1);
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

/** RATE_LIMIT_POINTS, RATE_LIMIT_ADDRESS_POINTS (0: no ceiling) and their window. */
export interface Quota {
  points: number;
  addressPoints: number;
  windowS: number;
}

function policyState(name: string, quota: number, windowS: number, consumed: Consumed) {
  const { res } = consumed;
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
