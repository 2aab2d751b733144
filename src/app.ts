import { useGraphQlJit } from '@envelop/graphql-jit';
import { createYoga, type Plugin, type YogaServerOptions } from 'graphql-yoga';
import { createRangeCache, type RangeCache } from './cache/ranges.js';
import { createRefreshes, type Refreshes } from './cache/refresh.js';
import { createMemoryResponseStore, type ResponseStore } from './cache/response-store.js';
import { useCacheControl } from './cache/use-cache-control.js';
import { useRangeCache } from './cache/use-range-cache.js';
import { useResponseCache } from './cache/use-response-cache.js';
import type { Config } from './config.js';
import { createContextFactory, type RequestContext, type ServerContext } from './context.js';
import { type CredentialPolicy, createCredentialPolicy } from './credentials.js';
import {
  DOCUMENT_ID_PARAM,
  hasOneOperation,
  operationNames,
  usesIncrementalDelivery,
} from './documents.js';
import { maskError } from './errors.js';
import { createHealth, type Health } from './http/health.js';
import { useBodySizeLimit } from './http/use-body-size.js';
import { useCompression } from './http/use-compression.js';
import { corsOptions, createOriginMatcher, useCsrfPrevention } from './http/use-csrf-cors.js';
import { useGraphiQL } from './http/use-graphiql.js';
import { useIncrementalDelivery } from './http/use-incremental-delivery.js';
import { useMediaType } from './http/use-media-type.js';
import { type MetricsSource, registrySource, useMetrics } from './http/use-metrics.js';
import { useNoSniff } from './http/use-nosniff.js';
import { useReadiness } from './http/use-readiness.js';
import { useUpstreamHeaders } from './http/use-upstream-headers.js';
import { schema } from './schema/index.js';
import { type ApqStore, createMemoryApqStore, useApq } from './security/use-apq.js';
import { useClientTokens } from './security/use-client-tokens.js';
import { useCost } from './security/use-cost.js';
import { useLimits } from './security/use-limits.js';
import { useListLimits } from './security/use-list-limits.js';
import { useOperationTypes } from './security/use-operation-types.js';
import { type RateLimiter, useRateLimit } from './security/use-rate-limit.js';
import { useTrustedDocuments } from './security/use-trusted-documents.js';
import { type Logger, silentLogger, yogaLogger } from './telemetry/logger.js';
import { createMetrics, type Metrics } from './telemetry/metrics.js';
import type { Tracing } from './telemetry/tracing.js';
import { useFederatedTracing } from './telemetry/use-federated-tracing.js';
import { useRequestLog } from './telemetry/use-request-log.js';
import { useTracing } from './telemetry/use-tracing.js';
import { useUpstreamCalls } from './telemetry/use-upstream-calls.js';
import type { UpstreamClient } from './upstream/client.js';

export interface AppDeps {
  config: Config;
  client: UpstreamClient;
  /** Where unexpected errors are reported; their details never reach the client. */
  logError?: (error: unknown) => void;
  /** Request lines and Yoga's own messages; default: silent (tests, tools). */
  logger?: Logger;
  /** Default: a fresh registry for this app. main.ts passes the one its client reports to. */
  metrics?: Metrics;
  /** Default: always ready. main.ts passes the one it drains on SIGTERM. */
  health?: Health;
  /** Default: none. main.ts builds one from config.rateLimit (memory or Redis). */
  rateLimiter?: RateLimiter | undefined;
  /** Where APQ keeps documents; default: memory, bounded by config.apq.cacheBytes. */
  apqStore?: ApqStore | undefined;
  /** Where the response cache keeps answers; default: memory, config.responseCache.maxBytes. */
  responseStore?: ResponseStore | undefined;
  /**
   * What /metrics answers; default: this app's registry. A cluster worker answers for all. Null:
   * /metrics is served on a port of its own (METRICS_PORT), and this app has no such route.
   */
  metricsSource?: MetricsSource | null | undefined;
  /** The running OpenTelemetry SDK, when spans are exported (main.ts starts it). */
  tracing?: Tracing | undefined;
  /**
   * The list ranges kept per caller (src/cache/ranges.ts); createApp makes one in memory
   * when the response cache is on. None: every range is fetched.
   */
  rangeCache?: RangeCache | undefined;
  /** Background refreshes of kept ranges (stale-while-revalidate); main.ts drains them. */
  refreshes?: Refreshes | undefined;
  /** The one credential policy (src/credentials.ts); createApp builds it from `config` if absent. */
  credentials?: CredentialPolicy | undefined;
}

/** The routes the facade answers; everything else is 404. */
export const PATHS = {
  graphql: '/graphql',
  /** Alive: Yoga's own health check answers 200 here. */
  health: '/health',
  readiness: '/readiness',
  metrics: '/metrics',
} as const;

/**
 * One named step of the pipeline and the plugins it adds: none where the configuration turns it
 * off.
 */
interface Stage {
  readonly name: string;
  readonly plugins: readonly AppPlugin[];
}

/** Whatever Yoga takes as a plugin of this app: one typed with the context it reads, or a plain one. */
type AppPlugin = NonNullable<AppOptions['plugins']>[number];
type AppOptions = YogaServerOptions<ServerContext, RequestContext>;

function stage(name: string, plugins: AppPlugin | AppPlugin[] | false | null | undefined): Stage {
  return { name, plugins: !plugins ? [] : Array.isArray(plugins) ? plugins : [plugins] };
}

/**
 * graphql-jit: each validated document is compiled to a function once, cached per parsed
 * document, so the cache is bounded by Yoga's parse cache. Yoga's own executor runs the rest: a
 * document with @defer or @stream (graphql-jit has no incremental delivery), and one with several
 * operations, since @envelop/graphql-jit caches the operation it compiled first by document alone
 * and would answer that one whatever operationName a later request names.
 */
function useJit(): Plugin {
  return useGraphQlJit(
    {},
    {
      enableIf: (args) => !usesIncrementalDelivery(args.document) && hasOneOperation(args.document),
    },
  ) as Plugin;
}

/**
 * The pipeline, in the order a request meets it. Order matters within a phase: the request log
 * sees every request first; the cheap refusals (CSRF, rate limit, client token) run before the
 * body is read; the document limits run before any resolver or upstream call; compression runs
 * last, since it rebuilds the answer from the headers the others set.
 */
function createPipeline({
  config,
  logger = silentLogger(),
  metrics = createMetrics(),
  health = createHealth(),
  rateLimiter,
  apqStore,
  responseStore,
  metricsSource = registrySource(metrics.registry),
  tracing,
  rangeCache,
  credentials = createCredentialPolicy(config),
}: AppDeps): Stage[] {
  const { documents, only } = config.persistedDocuments;
  const { acceptsClient } = credentials;
  // An answer depends on its caller when the caller's credential goes upstream, when callers are
  // checked (an answer is for token holders only), or when something of theirs is forwarded.
  const perCaller =
    credentials.mode === 'forward' ||
    acceptsClient !== undefined ||
    config.forwardHeaders.length > 0;
  const { trustProxy } = config.rateLimit;
  return [
    // Around the whole request: its log line and metrics, and what every answer's headers say.
    // The request log first: its onRequest makes the record a batch's operations share.
    stage(
      'requestLog',
      useRequestLog({
        logger,
        metrics,
        probePaths: [PATHS.health, PATHS.readiness, PATHS.metrics],
        trustedOperationNames: documents && operationNames(documents.values()),
      }),
    ),
    stage('cacheControl', useCacheControl({ perCaller, forwardHeaders: config.forwardHeaders })),
    stage('noSniff', useNoSniff()),
    // At request parsing: the routes that are not GraphQL, then refusals before the body is read.
    stage('metrics', metricsSource && useMetrics(metricsSource, PATHS.metrics)),
    stage('readiness', useReadiness(health, PATHS.readiness)),
    stage(
      'graphiql',
      config.graphiql && useGraphiQL({ endpoint: PATHS.graphql, title: 'GraphQL facade' }),
    ),
    stage('csrf', useCsrfPrevention(createOriginMatcher(config.corsOrigins))),
    stage(
      'rateLimit',
      rateLimiter && useRateLimit(rateLimiter, { trustProxy, isAccepted: acceptsClient }),
    ),
    stage('clientTokens', acceptsClient && useClientTokens(acceptsClient)),
    stage('bodySize', useBodySizeLimit(config.limits.maxBodyBytes)),
    stage('mediaType', useMediaType()),
    // Once the parameters are read, before parsing: which document runs. A trusted document's id
    // first; then APQ, unless only trusted documents run.
    stage('trustedDocuments', documents && useTrustedDocuments({ documents, only })),
    stage(
      'apq',
      config.apq.enabled && useApq(apqStore ?? createMemoryApqStore(config.apq.cacheBytes)),
    ),
    // Once the document is known: a kept answer for the same caller is the answer, unparsed.
    stage(
      'responseCache',
      config.responseCache.enabled &&
        useResponseCache({
          store: responseStore ?? createMemoryResponseStore(config.responseCache.maxBytes),
          credentials,
        }),
    ),
    // At parse and validation: depth, tokens, aliases, directives, introspection; the operation
    // types the schema has (no subscriptions); @defer and @stream, and their rules.
    stage('limits', useLimits(config)),
    stage('operationTypes', useOperationTypes()),
    stage('incrementalDelivery', useIncrementalDelivery()),
    // Before execution: list lengths before anything coerces the variables (the cost does), then
    // the cost with the variables, which grows with `limit` and `first`.
    stage('listLimits', useListLimits()),
    stage('cost', useCost({ maxCost: config.limits.maxCost, maxPageSize: config.maxPageSize })),
    stage('jit', useJit()),
    // After execution: the REST calls behind the answer, in development or for DEBUG_TOKEN.
    stage(
      'upstreamCalls',
      useUpstreamCalls({ production: config.production, debugToken: config.debugToken }),
    ),
    // The upstream's rate-limit headers, from the calls behind the answer, on the answer.
    stage('upstreamHeaders', useUpstreamHeaders()),
    // A mutation forgets its caller's kept list ranges; the ranges a query read are shown.
    stage('rangeCache', rangeCache && useRangeCache(rangeCache)),
    // A gateway's `extensions.ftv1`, when it sends `apollo-federation-include-trace: ftv1`: such a
    // request runs over a traced copy of the schema, so after `jit`, whose executor it replaces.
    stage('federatedTracing', config.federatedTracing && useFederatedTracing()),
    // Around parse, validate and execute: their spans, under the server span.
    stage('tracing', tracing && useTracing(tracing, PATHS.graphql)),
    // Last, around the response.
    stage('compression', useCompression({ minBytes: 1024 })),
  ];
}

/** Yoga's options for the app, with the plugins of `pipeline` in order. */
function appOptions(
  {
    config,
    client,
    logger,
    logError = logger ? () => {} : console.error,
    tracing,
    metrics,
    rangeCache,
    refreshes,
    credentials,
  }: AppDeps,
  pipeline: readonly Stage[],
): AppOptions {
  return {
    schema,
    context: createContextFactory({
      config,
      client,
      tracer: tracing?.tracer,
      onJoin: metrics && ((route) => metrics.countJoinedCall(route)),
      onCacheLookup: metrics && ((route, result) => metrics.countCacheLookup(route, result)),
      ranges: rangeCache,
      refreshes,
      credentials,
    }),
    graphqlEndpoint: PATHS.graphql,
    healthCheckEndpoint: PATHS.health,
    landingPage: false,
    logging: yogaLogger(logger ?? silentLogger()),
    // A header the facade forwards is one an allowed page may send.
    cors: corsOptions(
      config.corsOrigins,
      [...config.corsAllowedHeaders, ...config.forwardHeaders],
      config.upstream.responseHeaders,
    ),
    batching: config.limits.batchingLimit > 0 ? { limit: config.limits.batchingLimit } : false,
    ...(config.persistedDocuments.documents ? { extraParamNames: [DOCUMENT_ID_PARAM] } : {}),
    // Capped by useBodySizeLimit instead: Yoga's cap streams every body through a transform.
    maxRequestBodySize: false,
    plugins: pipeline.flatMap((stage) => stage.plugins),
    // Served by useGraphiQL, built once; Yoga's own renders the page on every view.
    graphiql: false,
    maskedErrors: {
      maskError: (error) => maskError(error, logError),
    },
  };
}

/**
 * The parts createApp fills in when not given: one metrics registry for the pipeline and the
 * context's joined calls alike, and the range cache, off with the response cache
 * (RESPONSE_CACHE=false) and bounded like it (RESPONSE_CACHE_BYTES).
 */
function completeDeps(deps: AppDeps): AppDeps {
  const metrics = deps.metrics ?? createMetrics();
  return {
    ...deps,
    metrics,
    refreshes:
      deps.refreshes ??
      createRefreshes({ onEnd: (route, outcome) => metrics.countRefresh(route, outcome) }),
    credentials: deps.credentials ?? createCredentialPolicy(deps.config),
    rangeCache:
      deps.rangeCache ??
      (deps.config.responseCache.enabled
        ? createRangeCache(deps.config.responseCache.maxBytes)
        : undefined),
  };
}

/** The facade: Yoga running the pipeline. */
export function createApp(deps: AppDeps) {
  const complete = completeDeps(deps);
  return createYoga(appOptions(complete, createPipeline(complete)));
}
