import {
  BrokenCircuitError,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleAll,
} from 'cockatiel';
import type { Cluster, RedisOptions as IoRedisOptions, Redis } from 'ioredis';
import { parseRedisUrl, redisWhere } from './config/redis-url.js';
import type { Logger } from './telemetry/logger.js';

/** Why a command came back without Redis's answer: past its deadline, failed, or not sent. */
export type RedisMiss = 'timeout' | 'error' | 'skipped';

/** One server (or Sentinel's master) or a Cluster: what the stores and scripts are given. */
export type RedisClient = Redis | Cluster;

/** REDIS_KEY_PREFIX's default. */
export const REDIS_KEY_PREFIX = 'graphql-facade:';

// Failures in a row that make Redis skipped, and for how long before one command tries it again.
const FAILURES_TO_SKIP = 3;
const SKIP_MS = 2_000;
// The longest pause between two attempts to reconnect: a Redis back (or failed over) is used
// again within about this much, and a Redis that is gone costs one attempt a second.
const RECONNECT_MAX_MS = 1_000;

export interface RedisOptions {
  /** REDIS_TIMEOUT_MS. */
  timeoutMs: number;
  /** REDIS_KEY_PREFIX: ioredis puts it before every key, the scripts' keys included. */
  keyPrefix?: string | undefined;
  logger?: Logger | undefined;
  /** Told when Redis starts being skipped (false) and when it is used again (true). */
  onAvailability?: ((available: boolean) => void) | undefined;
  /** Told of every command that came back without Redis's answer. */
  onMiss?: ((reason: RedisMiss) => void) | undefined;
}

/**
 * The process's one Redis connection, for the rate limit, APQ and the response cache. Redis is a
 * cache, never a dependency: every command a request waits on goes through `run`, and each user
 * falls back to memory when it rejects (docs/operations.md#redis-rate-limits-and-apq).
 */
export interface RedisConnection {
  /** For defining scripts and for rate-limiter-flexible; its calls go through `run` too. */
  readonly client: RedisClient;
  /** False until Redis first answers, while it is disconnected, and while it is skipped. */
  readonly available: boolean;
  /** Scheme and hosts of REDIS_URL, never its password: for logs. */
  readonly where: string;
  /** Rejects past REDIS_TIMEOUT_MS, and at once while Redis is skipped or disconnected. */
  run<T>(command: () => Promise<T>): Promise<T>;
  /** True once connected (at once if it is), false after `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean>;
  disconnect(): void;
}

/** A command past REDIS_TIMEOUT_MS: ioredis's own deadline does not cover a Cluster's retries. */
class RedisDeadline extends Error {
  constructor() {
    super('Command timed out');
  }
}

const reconnect = (attempts: number) => Math.min(attempts * 100, RECONNECT_MAX_MS);

/** A client for REDIS_URL's form (server, Cluster or Sentinel), not yet connected. */
async function createClient(url: string, options: RedisOptions): Promise<RedisClient> {
  // Loaded only when used: a memory-only replica never holds the client in memory.
  const { Cluster, Redis } = await import('ioredis');
  const target = parseRedisUrl(url);
  // While Redis is away, calls fail at once instead of queueing behind a dead connection.
  const common = {
    keyPrefix: options.keyPrefix ?? REDIS_KEY_PREFIX,
    maxRetriesPerRequest: 1,
    commandTimeout: options.timeoutMs,
    username: target.username,
    password: target.password,
    ...(target.tls ? { tls: {} } : {}),
    // A master demoted by a failover refuses writes: find the new one.
    reconnectOnError: (error: Error) => (error.message.startsWith('READONLY') ? 2 : false),
  } satisfies Partial<IoRedisOptions>;
  switch (target.kind) {
    case 'server':
      return new Redis(url, { ...common, enableOfflineQueue: false, retryStrategy: reconnect });
    case 'sentinel':
      return new Redis({
        ...common,
        enableOfflineQueue: false,
        retryStrategy: reconnect,
        sentinels: target.sentinels,
        name: target.name,
        db: target.db,
        sentinelUsername: target.sentinelUsername,
        sentinelPassword: target.sentinelPassword,
        enableTLSForSentinelMode: target.tls,
        sentinelRetryStrategy: reconnect,
        // Not ioredis's failoverDetector: on the sentinels' late +switch-master it closes the
        // connection to the new master for good. A killed master closes the connection, and a
        // demoted one answers READONLY (above): either makes it ask the sentinels again.
      });
    case 'cluster':
      return new Cluster(target.nodes, {
        enableOfflineQueue: false,
        clusterRetryStrategy: reconnect,
        // A command sent where a failed master was is tried again once the slots are known anew,
        // within the command's deadline.
        retryDelayOnFailover: 50,
        retryDelayOnClusterDown: 50,
        retryDelayOnTryAgain: 50,
        slotsRefreshTimeout: 1_000,
        redisOptions: common,
      });
  }
}

/** Why a command missed, for REDIS misses' metric. */
function missReason(error: unknown): RedisMiss {
  if (error instanceof BrokenCircuitError) return 'skipped';
  return error instanceof Error && error.message === 'Command timed out' ? 'timeout' : 'error';
}

function withDeadline<T>(command: () => Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new RedisDeadline()), timeoutMs);
    command().then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** Whether Redis is connected and not skipped, told once per change. */
interface Availability {
  readonly connected: boolean;
  readonly available: boolean;
  /** A deliberate close (a shutdown) is not a Redis gone away. */
  close(): void;
}

function trackAvailability(
  client: RedisClient,
  circuit: ReturnType<typeof circuitBreaker>,
  options: RedisOptions,
  where: string,
): Availability {
  const { logger } = options;
  // Unknown until it first answers: a Redis down from the start is not "available". A new
  // client has not connected yet: ioredis connects on a later turn of the event loop.
  let connected = false;
  let skipped = false;
  let available = false;
  let reported: boolean | undefined;
  // Why the last attempt failed, until one succeeds; none for a Redis that was only late.
  let lastError: string | undefined;
  // One line when Redis goes away and one when it is back, however often ioredis retries; none
  // when it answers at start, which the start-up line says.
  let closing = false;
  const update = () => {
    available = connected && !skipped;
    if (available === reported || closing) return;
    const first = reported === undefined;
    reported = available;
    options.onAvailability?.(available);
    if (!available)
      logger?.warn(
        { redis: where, timeoutMs: options.timeoutMs, skipMs: SKIP_MS, reason: lastError },
        `Redis at ${where} not answering${lastError ? ` (${lastError})` : ''}; each process counts and keeps in memory until it does`,
      );
    else if (!first) logger?.info({ redis: where }, `Redis at ${where} answering again`);
  };
  // update() tells only of a change, however often ioredis emits an event. A server's or a
  // Cluster's failed attempt also closes; sentinels that never answer only err.
  client.on('error', (error: Error) => {
    lastError = error.message.split('\n')[0];
    update();
  });
  client.on('ready', () => {
    connected = true;
    lastError = undefined;
    update();
  });
  client.on('close', () => {
    connected = false;
    update();
  });
  circuit.onBreak(() => {
    skipped = true;
    update();
  });
  circuit.onReset(() => {
    skipped = false;
    update();
  });
  return {
    get connected() {
      return connected;
    },
    get available() {
      return available;
    },
    close() {
      closing = true;
    },
  };
}

export async function connectRedis(url: string, options: RedisOptions): Promise<RedisConnection> {
  const where = redisWhere(url);
  const client = await createClient(url, options);
  const circuit = circuitBreaker(handleAll, {
    halfOpenAfter: SKIP_MS,
    breaker: new ConsecutiveBreaker(FAILURES_TO_SKIP),
  });
  const state = trackAvailability(client, circuit, options, where);
  const missed = (error: unknown): never => {
    options.onMiss?.(missReason(error));
    throw error;
  };

  return {
    client,
    get available() {
      return state.available;
    },
    where,
    run(command) {
      // Disconnected, a command would fail at once anyway: not counted against the circuit, so
      // that a reconnected Redis (a new master) is used at once. cockatiel makes calls wait for a
      // half-open circuit's trial; a request does not wait.
      const attempt =
        !state.connected || circuit.state === CircuitState.HalfOpen
          ? Promise.reject(new BrokenCircuitError())
          : circuit.execute(() => withDeadline(command, options.timeoutMs));
      return attempt.catch(missed);
    },
    ready(timeoutMs) {
      if (state.connected) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          client.off('ready', onReady);
          resolve(false);
        }, timeoutMs);
        const onReady = () => {
          clearTimeout(timer);
          resolve(true);
        };
        client.once('ready', onReady);
      });
    },
    disconnect() {
      state.close();
      client.disconnect();
    },
  };
}
