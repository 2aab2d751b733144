// The process's open subscriptions: their bounds (per client and in all), how each ends, and the
// end of them all when the process stops (docs/domains.md#watching-the-record).
import type { Config } from '../config/load.js';
import { FacadeError } from '../errors.js';
import type { Logger } from '../telemetry/logger.js';
import type { Metrics } from '../telemetry/metrics.js';

/** A refused subscription may try again then: streams last minutes, so sooner is pointless. */
const RETRY_AFTER_S = 10;

export interface OpenSubscription {
  /** Once, when the stream ends: frees its place, counts and logs its end. */
  end(reason: string, details?: Record<string, unknown>): void;
}

export interface Subscriptions {
  /**
   * Takes a place for each key (the client's, and its address when the client is not verified);
   * RATE_LIMITED past MAX_SUBSCRIPTIONS_PER_CLIENT for any of them or MAX_SUBSCRIPTIONS in all.
   */
  open(keys: readonly string[], field: string): OpenSubscription;
  readonly active: number;
  /** Aborted when the process stops: each stream sends its last event and completes. */
  readonly shutdown: AbortSignal;
  /** Ends every stream; resolves once all have ended, or after `graceMs`. */
  drain(graceMs: number): Promise<void>;
}

export interface SubscriptionsOptions {
  limits: Pick<Config['subscriptions'], 'maxPerClient' | 'maxOpen'>;
  metrics?: Pick<Metrics, 'observeSubscriptions' | 'countSubscriptionEnd'> | undefined;
  logger?: Logger | undefined;
}

export function createSubscriptions({
  limits,
  metrics,
  logger,
}: SubscriptionsOptions): Subscriptions {
  const held = new Map<string, number>();
  const stopping = new AbortController();
  let active = 0;
  let allEnded: (() => void) | undefined;
  const refuse = (message: string): never => {
    throw new FacadeError('RATE_LIMITED', message, {
      retryAfter: RETRY_AFTER_S,
      http: { status: 429, headers: { 'Retry-After': String(RETRY_AFTER_S) } },
    });
  };
  return {
    get active() {
      return active;
    },
    shutdown: stopping.signal,
    open(keys, field) {
      if (stopping.signal.aborted) refuse('The server is stopping; subscribe again in a moment');
      if (active >= limits.maxOpen)
        refuse('Too many open subscriptions on this server (MAX_SUBSCRIPTIONS); try again later');
      if (keys.some((key) => (held.get(key) ?? 0) >= limits.maxPerClient))
        refuse(
          `Too many open subscriptions for this client (MAX_SUBSCRIPTIONS_PER_CLIENT: ${limits.maxPerClient}); end one first`,
        );
      for (const key of keys) held.set(key, (held.get(key) ?? 0) + 1);
      active += 1;
      metrics?.observeSubscriptions(active);
      const started = Date.now();
      let ended = false;
      return {
        end(reason, details = {}) {
          if (ended) return;
          ended = true;
          for (const key of keys) {
            const left = (held.get(key) ?? 1) - 1;
            if (left > 0) held.set(key, left);
            else held.delete(key);
          }
          active -= 1;
          metrics?.observeSubscriptions(active);
          metrics?.countSubscriptionEnd(field, reason);
          logger?.info(
            { subscription: field, reason, durationMs: Date.now() - started, ...details },
            'subscription ended',
          );
          if (active === 0) allEnded?.();
        },
      };
    },
    async drain(graceMs) {
      stopping.abort();
      if (active === 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => {
          allEnded = resolve;
        }),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}
