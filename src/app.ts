import { type JITCache, useGraphQlJit } from '@envelop/graphql-jit';
import { createYoga, type Plugin, type YogaServerOptions } from 'graphql-yoga';
import { createDocumentCaches, type DocumentCaches } from './cache/documents.js';
import { createMemoryResponseStore, type ResponseStore } from './cache/response-store.js';
import { useCacheControl } from './cache/use-cache-control.js';
import { useResponseCache } from './cache/use-response-cache.js';
import type { Config } from './config/load.js';
import { createContextFactory, type RequestContext, type ServerContext } from './context.js';
import { type CredentialPolicy, createCredentialPolicy } from './credentials.js';
import { maskError } from './errors.js';
import { createHealth, type Health } from './http/health.js';
import { useBodySizeLimit } from './http/use-body-size.js';
import { useCompression } from './http/use-compression.js';
import { corsOptions, createOriginMatcher, useCsrfPrevention } from './http/use-csrf-cors.js';
import { useGraphiQL } from './http/use-graphiql.js';
import { useIncrementalDelivery } from './http/use-incremental-delivery.js';
import { useMediaType } from './http/use-media-type.js';
import { type MetricsSource, registrySource, useMetrics } from './http/use-metrics.js';
import { useMultipartSubscriptions } from './http/use-multipart-subscriptions.js';
import { useNoSniff } from './http/use-nosniff.js';
import { useReadiness } from './http/use-readiness.js';
import { useUpstreamHeaders } from './http/use-upstream-headers.js';
import { createRangeCache, type RangeCache } from './read/ranges.js';
import type { SharedRanges } from './read/ranges-redis.js';
import { createRefreshes, type Refreshes } from './read/refresh.js';
import { useRangeCache } from './read/use-range-cache.js';
import {
  DOCUMENT_ID_PARAM,
  hasOneOperation,
  hasSubscription,
  operationNames,
  usesIncrementalDelivery,
} from './request-document.js';
import { schema } from './schema/index.js';
import { createSubscriptions, type Subscriptions } from './security/subscriptions.js';
import { type ApqStore, createMemoryApqStore, useApq } from './security/use-apq.js';
import { useClientTokens } from './security/use-client-tokens.js';
import { useCost } from './security/use-cost.js';
import { useLimits } from './security/use-limits.js';
import { useListLimits } from './security/use-list-limits.js';
import { clientKeys, type RateLimiter, useRateLimit } from './security/use-rate-limit.js';
import { useTrustedDocuments } from './security/use-trusted-documents.js';
import { type Logger, silentLogger, yogaLogger } from './telemetry/logger.js';
import { createMetrics, type Metrics } from './telemetry/metrics.js';
import type { Tracing } from './telemetry/tracing.js';
import { useFederatedTracing } from './telemetry/use-federated-tracing.js';
import { useRequestLog } from './telemetry/use-request-log.js';
import { useTracing } from './telemetry/use-tracing.js';
import { useUpstreamCalls } from './telemetry/use-upstream-calls.js';
import type { UpstreamClient } from './upstream/client.js';
import type { DnsWatchStore } from './upstream/dns-watch-store.js';

export interface AppDeps {
  config: Config;
  client: UpstreamClient;
  /** Where unexpected errors are reported; their details never reach the client. */
  logError?: (error: unknown) => void;
  /** Request lines and Yoga's own messages; default: silent. */
  logger?: Logger;
  /** Default: a fresh registry for this app. */
  metrics?: Metrics;
  /** Default: always ready. */
  health?: Health;
  /** Default: no rate limit. */
  rateLimiter?: RateLimiter | undefined;
  /** Default: memory, bounded by APQ_CACHE_BYTES. */
  apqStore?: ApqStore | undefined;
  /** Default: memory, bounded by RESPONSE_CACHE_BYTES. */
  responseStore?: ResponseStore | undefined;
  /** What /metrics answers; default: this app's registry. Null: METRICS_PORT serves it instead. */
  metricsSource?: MetricsSource | null | undefined;
  /** The running OpenTelemetry SDK, when spans are exported. */
  tracing?: Tracing | undefined;
  /** The list ranges kept per caller; default: in memory, with the response cache and its bound. */
  rangeCache?: RangeCache | undefined;
  /** The kept ranges' tier every process shares (Redis), behind `rangeCache`; default: none. */
  sharedRanges?: SharedRanges | undefined;
  /** Background refreshes of kept ranges (stale-while-revalidate). */
  refreshes?: Refreshes | undefined;
  /** Default: built from `config`. */
  credentials?: CredentialPolicy | undefined;
  /** The open subscriptions, which the process ends when it stops; default: this app's own. */
  subscriptions?: Subscriptions | undefined;
  /** Where the fleet shares its watched names (Redis); default: each process looks up alone. */
  dnsWatchStore?: DnsWatchStore | undefined;
  /** Parsed documents, their errors and compiled queries; default: bounded by DOCUMENT_CACHE_BYTES. */
  documentCaches?: DocumentCaches | undefined;
}

/** AppDeps with its defaults filled in, built once for the pipeline and the context alike. */
type AppParts = AppDeps &
  Required<Pick<AppDeps, 'logger' | 'logError' | 'metrics' | 'health' | 'refreshes'>> & {
    credentials: CredentialPolicy;
    metricsSource: MetricsSource | null;
    subscriptions: Subscriptions;
    documentCaches: DocumentCaches;
  };

function withDefaults(deps: AppDeps): AppParts {
  const { config } = deps;
  const metrics = deps.metrics ?? createMetrics();
  return {
    ...deps,
    logger: deps.logger ?? silentLogger(),
    logError: deps.logError ?? (deps.logger ? () => {} : console.error),
    metrics,
    health: deps.health ?? createHealth(),
    metricsSource:
      deps.metricsSource === undefined ? registrySource(metrics.registry) : deps.metricsSource,
    refreshes:
      deps.refreshes ??
      createRefreshes({ onEnd: (route, outcome) => metrics.countRefresh(route, outcome) }),
    credentials: deps.credentials ?? createCredentialPolicy(config),
    subscriptions:
      deps.subscriptions ??
      createSubscriptions({ limits: config.subscriptions, metrics, logger: deps.logger }),
    documentCaches: deps.documentCaches ?? createDocumentCaches(config.limits.documentCacheBytes),
    rangeCache:
      deps.rangeCache ??
      (config.responseCache.enabled ? createRangeCache(config.responseCache.maxBytes) : undefined),
  };
}

/** The routes the facade answers; everything else is 404. */
export const PATHS = {
  graphql: '/graphql',
  /** Yoga's own health check. */
  health: '/health',
  readiness: '/readiness',
  metrics: '/metrics',
} as const;

/** One named step of the pipeline and its plugins: none where the configuration turns it off. */
interface Stage {
  readonly name: string;
  readonly plugins: readonly AppPlugin[];
}

type AppPlugin = NonNullable<AppOptions['plugins']>[number];
type AppOptions = YogaServerOptions<ServerContext, RequestContext>;

function stage(name: string, plugins: AppPlugin | AppPlugin[] | false | null | undefined): Stage {
  return { name, plugins: !plugins ? [] : Array.isArray(plugins) ? plugins : [plugins] };
}

/**
 * graphql-jit compiles each document once; Yoga's executor runs @defer and @stream, documents
 * of several operations, which @envelop/graphql-jit would answer with the first one it compiled,
 * and subscriptions, whose field's `subscribe` graphql-jit hands the variables instead of its arguments.
 */
function useJit(cache: JITCache): Plugin {
  return useGraphQlJit(
    {},
    {
      enableIf: ({ document }) =>
        !usesIncrementalDelivery(document) &&
        hasOneOperation(document) &&
        !hasSubscription(document),
      cache,
    },
  ) as Plugin;
}

/**
 * The pipeline, in the order a request meets it: cheap refusals before the body is read, document
 * limits before any resolver, compression last (CONTRIBUTING.md, "Add a plugin").
 */
function createPipeline(app: AppParts): Stage[] {
  const { config, credentials, metrics } = app;
  const { documents, only } = config.persistedDocuments;
  return [
    // Around the whole request. The request log first: it makes the record a batch shares.
    stage(
      'requestLog',
      useRequestLog({
        logger: app.logger,
        metrics,
        probePaths: [PATHS.health, PATHS.readiness, PATHS.metrics],
        trustedOperationNames: documents && operationNames(documents.values()),
      }),
    ),
    stage(
      'cacheControl',
      useCacheControl({
        perCaller: credentials.answerDependsOnCaller,
        forwardHeaders: config.forwardHeaders,
      }),
    ),
    stage('noSniff', useNoSniff()),
    // At request parsing: the routes that are not GraphQL, then refusals before the body is read.
    stage('metrics', app.metricsSource && useMetrics(app.metricsSource, PATHS.metrics)),
    stage('readiness', useReadiness(app.health, PATHS.readiness)),
    stage(
      'graphiql',
      config.graphiql && useGraphiQL({ endpoint: PATHS.graphql, title: 'GraphQL facade' }),
    ),
    stage('csrf', useCsrfPrevention(createOriginMatcher(config.corsOrigins))),
    stage(
      'rateLimit',
      app.rateLimiter &&
        useRateLimit(app.rateLimiter, {
          trustProxy: config.rateLimit.trustProxy,
          isAccepted: credentials.acceptsClient,
          batchingLimit: config.limits.batchingLimit,
        }),
    ),
    stage('clientTokens', credentials.acceptsClient && useClientTokens(credentials.acceptsClient)),
    stage('bodySize', useBodySizeLimit(config.limits.maxBodyBytes)),
    stage('mediaType', useMediaType()),
    // Once the parameters are read: which document runs, a trusted document's id first.
    stage('trustedDocuments', documents && useTrustedDocuments({ documents, only })),
    stage(
      'apq',
      config.apq.enabled && useApq(app.apqStore ?? createMemoryApqStore(config.apq.cacheBytes)),
    ),
    stage(
      'responseCache',
      config.responseCache.enabled &&
        useResponseCache({
          store: app.responseStore ?? createMemoryResponseStore(config.responseCache.maxBytes),
          credentials,
        }),
    ),
    // At parse and validation.
    stage('limits', useLimits(config)),
    stage('incrementalDelivery', useIncrementalDelivery()),
    stage('multipartSubscriptions', useMultipartSubscriptions()),
    // After every stage that adds a validation rule: a result is kept for the rules it ran with.
    stage('documentCache', app.documentCaches.plugin),
    // Before execution: list lengths before the cost coerces the variables.
    stage('listLimits', useListLimits()),
    stage('cost', useCost({ maxCost: config.limits.maxCost, maxPageSize: config.maxPageSize })),
    stage('jit', useJit(app.documentCaches.compiled)),
    // After execution.
    stage(
      'upstreamCalls',
      useUpstreamCalls({ production: config.production, debugToken: config.debugToken }),
    ),
    stage('upstreamHeaders', useUpstreamHeaders()),
    stage('rangeCache', app.rangeCache && useRangeCache(app.rangeCache, app.sharedRanges)),
    // After `jit`: a traced request runs over a traced copy of the schema, replacing its executor.
    stage('federatedTracing', config.federatedTracing && useFederatedTracing()),
    stage('tracing', app.tracing && useTracing(app.tracing, PATHS.graphql)),
    // Last: it rebuilds the answer from the headers the others set.
    stage('compression', useCompression({ minBytes: 1024 })),
  ];
}

/** Keyed as the rate limit keys a client: its token, and its address too unless the token is verified. */
function subscriberKeys({ config, credentials }: AppParts) {
  const options = {
    trustProxy: config.rateLimit.trustProxy,
    isAccepted: credentials.acceptsClient,
  };
  return (request: Request, serverContext: unknown): string[] => {
    const keys = clientKeys(request, serverContext, options);
    return keys.address === undefined || keys.client === `ip:${keys.address}`
      ? [keys.client]
      : [keys.client, `ip:${keys.address}`];
  };
}

/** The facade: Yoga running the pipeline. */
export function createApp(deps: AppDeps) {
  const app = withDefaults(deps);
  const { config } = app;
  return createYoga<ServerContext, RequestContext>({
    schema,
    context: createContextFactory({
      config,
      client: app.client,
      metrics: app.metrics,
      tracer: app.tracing?.tracer,
      ranges: app.rangeCache,
      sharedRanges: app.sharedRanges,
      refreshes: app.refreshes,
      credentials: app.credentials,
      watching: {
        subscriptions: app.subscriptions,
        subscriberKeys: subscriberKeys(app),
        dnsWatchStore: app.dnsWatchStore,
      },
    }),
    graphqlEndpoint: PATHS.graphql,
    healthCheckEndpoint: PATHS.health,
    landingPage: false,
    logging: yogaLogger(app.logger),
    // A header the facade forwards is one an allowed page may send.
    cors: corsOptions(
      config.corsOrigins,
      [...config.corsAllowedHeaders, ...config.forwardHeaders],
      config.upstream.responseHeaders,
    ),
    batching: config.limits.batchingLimit > 0 ? { limit: config.limits.batchingLimit } : false,
    ...(config.persistedDocuments.documents ? { extraParamNames: [DOCUMENT_ID_PARAM] } : {}),
    // useBodySizeLimit caps the body: Yoga's cap streams every body through a transform.
    maxRequestBodySize: false,
    // Bounded in bytes: Yoga's own caches count documents, whatever each holds.
    parserAndValidationCache: app.documentCaches.yoga,
    plugins: createPipeline(app).flatMap((stage) => stage.plugins),
    // useGraphiQL serves the page, built once.
    graphiql: false,
    maskedErrors: { maskError: (error) => maskError(error, app.logError) },
  });
}
