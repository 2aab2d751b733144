import {
  BrokenCircuitError,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleAll,
} from 'cockatiel';
import type { Redis } from 'ioredis';
import type { Logger } from './telemetry/logger.js';

/** Why a command came back without Redis's answer: past its deadline, failed, or not sent. */
export type RedisMiss = 'timeout' | 'error' | 'skipped';

// Failures in a row that make Redis skipped, and for how long before one command tries it again.
const FAILURES_TO_SKIP = 3;
const SKIP_MS = 2_000;

export interface RedisOptions {
  /** REDIS_TIMEOUT_MS. */
  timeoutMs: number;
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
  readonly client: Redis;
  readonly available: boolean;
  /** Rejects past REDIS_TIMEOUT_MS, and at once while Redis is skipped. */
  run<T>(command: () => Promise<T>): Promise<T>;
  disconnect(): void;
}

export async function connectRedis(url: string, options: RedisOptions): Promise<RedisConnection> {
  // Loaded only when used: a memory-only replica never holds the client in memory.
  const { Redis } = await import('ioredis');
  const { logger } = options;
  // While Redis is away, calls fail at once instead of queueing behind a dead connection.
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: options.timeoutMs,
  });
  client.on('error', (error: Error) => logger?.warn({ err: error }, 'Redis error'));

  const circuit = circuitBreaker(handleAll, {
    halfOpenAfter: SKIP_MS,
    breaker: new ConsecutiveBreaker(FAILURES_TO_SKIP),
  });
  let available = true;
  // One line when Redis starts being skipped, not one per trial.
  circuit.onBreak(() => {
    if (!available) return;
    available = false;
    logger?.warn(
      { timeoutMs: options.timeoutMs, skipMs: SKIP_MS },
      'Redis not answering; skipped for now, each process counts and keeps in memory',
    );
    options.onAvailability?.(false);
  });
  circuit.onReset(() => {
    available = true;
    logger?.info('Redis answering again');
    options.onAvailability?.(true);
  });
  const missed = (error: unknown): never => {
    options.onMiss?.(
      error instanceof BrokenCircuitError
        ? 'skipped'
        : error instanceof Error && error.message === 'Command timed out'
          ? 'timeout'
          : 'error',
    );
    throw error;
  };

  return {
    client,
    get available() {
      return available;
    },
    run(command) {
      // cockatiel makes calls wait for a half-open circuit's trial; a request does not wait.
      const attempt =
        circuit.state === CircuitState.HalfOpen
          ? Promise.reject(new BrokenCircuitError())
          : circuit.execute(command);
      return attempt.catch(missed);
    },
    disconnect: () => client.disconnect(),
  };
}
