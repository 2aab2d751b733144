import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { RedisMiss } from '../redis.js';
import type { BreakerState } from '../upstream/breaker.js';
import type { CompletedCall } from '../upstream/client.js';
import { VERSION } from './build-info.js';

export interface Metrics {
  /** This app's own registry: tests build many apps in one process, each with its own counters. */
  registry: Registry;
  /** Wired to the UpstreamClient's `onCall`: one observation per attempt. */
  observeUpstreamCall(call: CompletedCall): void;
  /** An upstream read a request joined (another request's identical call in flight), by route. */
  countJoinedCall(route: string): void;
  /** Wired to the UpstreamClient's `onBreakerChange`: a route's circuit, its state and transitions. */
  observeBreaker(state: BreakerState, route: string): void;
  /** Every `extensions.code` of every answer, rejected-before-execution ones included. */
  countErrors(codes: readonly string[]): void;
  /** One executed operation and how long its request took; from the request log's hooks. */
  observeOperation(type: string | undefined, name: string | undefined, seconds: number): void;
  /** One executed operation by the client that sent it (`apollographql-client-name` / `-version`). */
  countClientOperation(client: ClientIdentity): void;
  /** Wired to the Redis connection (src/redis.ts): whether Redis is used or skipped. */
  observeRedis(available: boolean): void;
  /** Wired to the Redis connection: a command that came back without Redis's answer. */
  countRedisMiss(reason: RedisMiss): void;
  /** A read looked up in what was kept (the kept ranges), by route and what it found. */
  countCacheLookup(route: string, result: CacheLookup): void;
  /** A background refresh of kept data past its max-age (stale-while-revalidate) that ended. */
  countRefresh(route: string, outcome: 'ok' | 'failed'): void;
}

/** What a lookup found: fresh data, nothing usable, or data past its max-age served by a rule. */
export type CacheLookup = 'hit' | 'miss' | 'stale-while-revalidate' | 'stale-if-error';

/** What a caller says it is, from Apollo's client identity headers; bounded strings. */
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

// Operation names come from the caller: unbounded label values would let any client grow the
// registry (and every scrape) without limit. The first names seen keep their own series.
const OPERATION_NAMES = 100;
// Client names and versions come from the caller too: the first pairs seen keep their own series.
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

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'facade_build_info',
    help: 'The running build: always 1, its labels say which version on which Node',
    labelNames: ['version', 'node'],
    registers: [registry],
  }).set({ version: VERSION, node: process.version }, 1);
  const operationName = boundedNames(OPERATION_NAMES);
  const clientPair = boundedNames(CLIENT_PAIRS, Number.POSITIVE_INFINITY);

  const errors = new Counter({
    name: 'graphql_errors_total',
    help: 'GraphQL errors answered, by extensions.code (limits, rate limits and upstream failures alike)',
    labelNames: ['code'],
    registers: [registry],
  });
  const upstreamCalls = new Counter({
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
  // Names read by the soak tool and dashboards: keep them.
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
  const upstreamDuration = new Histogram({
    name: 'upstream_call_duration_seconds',
    help: 'Duration of upstream HTTP attempts, by route and HTTP status (or error code)',
    labelNames: ['route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });

  // The name and labels of Yoga's Prometheus plugin, so dashboards built for it keep working.
  // Observed from the request log, which already times each request and names its operation,
  // rather than by that plugin's own hooks on every request.
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

  // Registered with the connection's first report: a process without Redis has no such series.
  let redisAvailable: Gauge | undefined;
  const redisMisses = new Counter({
    name: 'redis_commands_missed_total',
    help: "Redis commands a request went on without Redis's answer to, by reason: timeout (past REDIS_TIMEOUT_MS), error, or skipped (Redis is being skipped after failures)",
    labelNames: ['reason'],
    registers: [registry],
  });

  const cacheLookups = new Counter({
    name: 'cache_lookups_total',
    help: 'Upstream reads looked up in what was kept, by route and result: hit (fresh), miss, or past max-age and served by stale-while-revalidate or stale-if-error',
    labelNames: ['route', 'result'],
    registers: [registry],
  });
  const cacheRefreshes = new Counter({
    name: 'cache_refreshes_total',
    help: 'Background refreshes of kept data past its max-age (stale-while-revalidate), by route and outcome',
    labelNames: ['route', 'outcome'],
    registers: [registry],
  });

  return {
    registry,
    countCacheLookup(route, result) {
      cacheLookups.inc({ route, result });
    },
    countRefresh(route, outcome) {
      cacheRefreshes.inc({ route, outcome });
    },
    observeRedis(available) {
      redisAvailable ??= new Gauge({
        name: 'redis_available',
        help: 'Whether Redis is used: 1, or 0 while it is skipped after failures and each process counts and keeps in memory',
        registers: [registry],
      });
      redisAvailable.set(available ? 1 : 0);
    },
    countRedisMiss(reason) {
      redisMisses.inc({ reason });
    },
    countClientOperation({ name = 'unknown', version = 'unknown' }) {
      if (clientPair(`${name}\u0000${version}`) === OTHER) {
        clientOperations.inc({ clientName: OTHER, clientVersion: OTHER });
      } else clientOperations.inc({ clientName: name, clientVersion: version });
    },
    observeUpstreamCall(call) {
      const labels = { route: call.route, status: String(call.outcome) };
      upstreamCalls.inc(labels);
      upstreamDuration.observe(labels, call.durationMs / 1000);
    },
    countJoinedCall(route) {
      joinedCalls.inc({ route });
    },
    observeBreaker(state, route) {
      breakerState.set({ route }, BREAKER_GAUGE[state]);
      breakerTransitions.inc({ state, route });
    },
    countErrors(codes) {
      for (const code of codes) errors.inc({ code });
    },
    observeOperation(type, name, seconds) {
      operations.observe(
        { operationType: type ?? 'unknown', operationName: operationName(name) },
        seconds,
      );
    },
  };
}
