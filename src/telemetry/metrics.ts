import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { RedisMiss } from '../redis.js';
import type { BreakerState } from '../upstream/breaker.js';
import type { CompletedCall } from '../upstream/client.js';
import { VERSION } from './build-info.js';

// Metric names, labels and help texts are the ones docs/operations.md#metrics lists: keep them.

/** What a lookup found: fresh data, nothing usable, or data past its max-age served by a rule. */
export type CacheLookup = 'hit' | 'miss' | 'stale-while-revalidate' | 'stale-if-error';

/** `apollographql-client-name` / `-version`, bounded strings. */
export interface ClientIdentity {
  name: string | undefined;
  version: string | undefined;
}

export interface MetricsOptions {
  /** Node's process metrics (memory, event loop, GC); on in the real process only. */
  processMetrics?: boolean;
  /** Labels on every series, e.g. the worker's id, so a cluster's aggregate keeps workers apart. */
  defaultLabels?: Record<string, string>;
}

export type Metrics = ReturnType<typeof createMetrics>;

// Operation and client names come from the caller: the first ones seen keep their own series,
// the rest count as `other`, so no caller can grow the registry.
const OPERATION_NAMES = 100;
const CLIENT_PAIRS = 50;
const OTHER = 'other';
const BREAKER_GAUGE: Record<BreakerState, number> = { closed: 0, open: 1, half_open: 2 };

function boundedNames(limit: number, maxLength = 64): (name: string | undefined) => string {
  const seen = new Set<string>();
  return (name) => {
    const value = (name ?? 'Anonymous').slice(0, maxLength);
    if (seen.has(value)) return value;
    if (seen.size >= limit) return OTHER;
    seen.add(value);
    return value;
  };
}

/** One registry per app: tests build many apps in one process, each with its own counters. */
export function createMetrics(options: MetricsOptions = {}) {
  const registry = new Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'facade_build_info',
    help: 'The running build: always 1, its labels say which version on which Node',
    labelNames: ['version', 'node'],
    registers: [registry],
  }).set({ version: VERSION, node: process.version }, 1);
  return {
    registry,
    ...operationMetrics(registry),
    ...upstreamMetrics(registry),
    ...cacheMetrics(registry),
    ...subscriptionMetrics(registry),
  };
}

function operationMetrics(registry: Registry) {
  const operationName = boundedNames(OPERATION_NAMES);
  const clientPair = boundedNames(CLIENT_PAIRS, Number.POSITIVE_INFINITY);
  const errors = new Counter({
    name: 'graphql_errors_total',
    help: 'GraphQL errors answered, by extensions.code (limits, rate limits and upstream failures alike)',
    labelNames: ['code'],
    registers: [registry],
  });
  // Yoga's Prometheus plugin's name and labels, observed from the request log's own timing.
  const operations = new Histogram({
    name: 'graphql_envelop_request_duration',
    help: 'Duration of executed GraphQL operations, request to answer, in seconds',
    labelNames: ['operationType', 'operationName'],
    registers: [registry],
  });
  const clientOperations = new Counter({
    name: 'graphql_client_operations_total',
    help: 'Executed GraphQL operations by the client that sent them (apollographql-client-name and -version; "unknown" when not sent, "other" past the first 50 pairs)',
    labelNames: ['clientName', 'clientVersion'],
    registers: [registry],
  });
  return {
    /** Every `extensions.code` of every answer, rejected-before-execution ones included. */
    countErrors(codes: readonly string[]) {
      for (const code of codes) errors.inc({ code });
    },
    observeOperation(type: string | undefined, name: string | undefined, seconds: number) {
      operations.observe(
        { operationType: type ?? 'unknown', operationName: operationName(name) },
        seconds,
      );
    },
    countClientOperation({ name = 'unknown', version = 'unknown' }: ClientIdentity) {
      if (clientPair(`${name}\u0000${version}`) === OTHER) {
        clientOperations.inc({ clientName: OTHER, clientVersion: OTHER });
      } else clientOperations.inc({ clientName: name, clientVersion: version });
    },
  };
}

function upstreamMetrics(registry: Registry) {
  const calls = new Counter({
    name: 'upstream_calls_total',
    help: 'Upstream HTTP attempts, by route and HTTP status (or error code when no answer came, or cancelled when the client went away first)',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
  const joinedCalls = new Counter({
    name: 'upstream_calls_joined_total',
    help: "Upstream reads a request joined instead of sending them (another request's identical call was in flight), by route",
    labelNames: ['route'],
    registers: [registry],
  });
  // A route's series appears with its circuit's first change; until then it is closed.
  const breakerState = new Gauge({
    name: 'upstream_breaker_state',
    help: "The upstream circuit breaker's state, by route: 0 closed, 1 open, 2 half-open",
    labelNames: ['route'],
    registers: [registry],
  });
  const breakerTransitions = new Counter({
    name: 'upstream_breaker_transitions_total',
    help: 'Changes of the upstream circuit breakers, by the state entered (open, half_open, closed) and route',
    labelNames: ['state', 'route'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'upstream_call_duration_seconds',
    help: 'Duration of upstream HTTP attempts, by route and HTTP status (or error code)',
    labelNames: ['route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  return {
    /** One observation per attempt (the UpstreamClient's `onCall`). */
    observeUpstreamCall(call: CompletedCall) {
      const labels = { route: call.route, status: String(call.outcome) };
      calls.inc(labels);
      duration.observe(labels, call.durationMs / 1000);
    },
    countJoinedCall(route: string) {
      joinedCalls.inc({ route });
    },
    observeBreaker(state: BreakerState, route: string) {
      breakerState.set({ route }, BREAKER_GAUGE[state]);
      breakerTransitions.inc({ state, route });
    },
  };
}

function cacheMetrics(registry: Registry) {
  // Registered with the connection's first report: a process without Redis has no such series.
  let redisAvailable: Gauge | undefined;
  const redisMisses = new Counter({
    name: 'redis_commands_missed_total',
    help: "Redis commands a request went on without Redis's answer to, by reason: timeout (past REDIS_TIMEOUT_MS), error, or skipped (Redis is being skipped after failures)",
    labelNames: ['reason'],
    registers: [registry],
  });
  const lookups = new Counter({
    name: 'cache_lookups_total',
    help: 'Upstream reads looked up in what was kept, by route and result: hit (fresh), miss, or past max-age and served by stale-while-revalidate or stale-if-error',
    labelNames: ['route', 'result'],
    registers: [registry],
  });
  const refreshes = new Counter({
    name: 'cache_refreshes_total',
    help: 'Background refreshes of kept data past its max-age (stale-while-revalidate), by route and outcome',
    labelNames: ['route', 'outcome'],
    registers: [registry],
  });
  return {
    observeRedis(available: boolean) {
      redisAvailable ??= new Gauge({
        name: 'redis_available',
        help: 'Whether Redis is used: 1, or 0 while it is skipped after failures and each process counts and keeps in memory',
        registers: [registry],
      });
      redisAvailable.set(available ? 1 : 0);
    },
    countRedisMiss(reason: RedisMiss) {
      redisMisses.inc({ reason });
    },
    countCacheLookup(route: string, result: CacheLookup) {
      lookups.inc({ route, result });
    },
    countRefresh(route: string, outcome: 'ok' | 'failed') {
      refreshes.inc({ route, outcome });
    },
  };
}

function subscriptionMetrics(registry: Registry) {
  const active = new Gauge({
    name: 'graphql_subscriptions_active',
    help: 'Subscriptions open now in this process',
    registers: [registry],
  });
  const ended = new Counter({
    name: 'graphql_subscriptions_ended_total',
    help: 'Subscriptions ended, by field and reason: matched, idle-limit, time-limit, shutdown, cancelled (the client left) or error',
    labelNames: ['field', 'reason'],
    registers: [registry],
  });
  const watchLookUps = new Counter({
    name: 'dns_watch_lookups_total',
    help: 'TXT look-ups this process made for watched names (subscriptions); names another replica looked up are not counted',
    registers: [registry],
  });
  return {
    countDnsWatchLookUp() {
      watchLookUps.inc();
    },
    observeSubscriptions(open: number) {
      active.set(open);
    },
    countSubscriptionEnd(field: string, reason: string) {
      ended.inc({ field, reason });
    },
  };
}
