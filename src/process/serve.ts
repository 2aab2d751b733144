// The serving process, once src/main.ts has loaded it: config, client, app, listen, shutdown, and
// the workers, if any.
import cluster from 'node:cluster';
import { createServer, type RequestListener, type Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { AggregatorRegistry } from 'prom-client';
import { createApp, PATHS } from '../app.js';
import { createRedisResponseStore } from '../cache/redis-store.js';
import { createMemoryResponseStore, type ResponseStore } from '../cache/response-store.js';
import { type Config, ConfigError, loadConfig } from '../config/load.js';
import { createCredentialPolicy } from '../credentials.js';
import { createHealth } from '../http/health.js';
import { type MetricsSource, metricsListener, registrySource } from '../http/use-metrics.js';
import { createRangeCache } from '../read/ranges.js';
import { createRedisRanges } from '../read/ranges-redis.js';
import { createRefreshes } from '../read/refresh.js';
import { connectRedis, type RedisConnection } from '../redis.js';
import { createSubscriptions } from '../security/subscriptions.js';
import { createMemoryApqStore, createRedisApqStore } from '../security/use-apq.js';
import { createRateLimiter } from '../security/use-rate-limit.js';
import { VERSION } from '../telemetry/build-info.js';
import { createLogger, type Logger } from '../telemetry/logger.js';
import { createMetrics, type Metrics } from '../telemetry/metrics.js';
import { UpstreamClient } from '../upstream/client.js';
import { createRedisDnsWatchStore } from '../upstream/dns-watch-store.js';
import { runPrimary, workerLink } from './cluster.js';
import { errorName, listenFailure, StartupError, unexpectedFailure } from './startup-errors.js';

/** Before any logger exists, and for start-up failures: one stderr line, exit 1. */
function failStartup(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

/** Unlike an app built by a test, a process that serves needs an upstream. */
type ServingConfig = Config & { upstreamUrl: string };

function readConfig(): ServingConfig {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) failStartup(`Invalid configuration: ${error.message}`);
    // The value is not repeated: it may be any variable's, a secret's included.
    failStartup(`Invalid configuration: could not be read (${errorName(error)})`);
  }
  const { upstreamUrl } = config;
  if (upstreamUrl === undefined) {
    failStartup(
      'Invalid configuration: UPSTREAM_URL: not set; it is the base URL of the REST API to front (`npm start` sets it to the built-in sandbox)',
    );
  }
  return { ...config, upstreamUrl };
}

type ListenVariables = { port: string; host: string };
const SERVER_VARIABLES: ListenVariables = { port: 'PORT', host: 'HOST' };
const METRICS_VARIABLES: ListenVariables = { port: 'METRICS_PORT', host: 'HOST' };

/** Listens, or fails with the start-up line that names the variable behind the port or the host. */
async function listenOn(
  server: NetServer,
  port: number,
  host: string | undefined,
  variables: ListenVariables,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((error: unknown) => {
    throw listenFailure(error, variables, `${host ?? '*'}:${port}`);
  });
}

/** Binds the port for a moment: a busy port fails start-up before anything else starts. */
async function checkPortFree(
  port: number,
  host: string | undefined,
  variables: ListenVariables,
): Promise<void> {
  if (port === 0) return;
  const probe = new NetServer();
  await listenOn(probe, port, host, variables);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

// What one client may hold of the server: docs/operations.md#connections.
const MAX_REQUESTS_IN_PROGRESS = 16;
const HEADERS_TIMEOUT_MS = 10_000;

function createHttpServer(config: Config, handler: RequestListener): Server {
  const { requestTimeoutMs, maxConnections } = config.server;
  // Keyed by the socket: the count goes when the connection goes.
  const inProgress = new WeakMap<Socket, number>();
  const server = createServer(
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs),
      // How often Node checks both timeouts; its default lets a request overrun them by 30 s.
      connectionsCheckingInterval: 1_000,
    },
    (request, response) => {
      const { socket } = request;
      const count = (inProgress.get(socket) ?? 0) + 1;
      if (count > MAX_REQUESTS_IN_PROGRESS || socket.destroyed) {
        socket.destroy();
        return;
      }
      inProgress.set(socket, count);
      response.once('close', () => {
        inProgress.set(socket, (inProgress.get(socket) ?? 1) - 1);
      });
      handler(request, response);
    },
  );
  server.maxConnections = maxConnections;
  return server;
}

/** /metrics on a port of its own (METRICS_PORT), on the same HOST. */
async function serveMetrics(config: Config, port: number, source: MetricsSource): Promise<Server> {
  const server = createHttpServer(config, metricsListener(source, PATHS.metrics));
  await listenOn(server, port, config.host, METRICS_VARIABLES);
  return server;
}

function announceMetrics(config: Config, logger: Logger, server: Server): void {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.metricsPort;
  const metricsUrl = `http://${config.host ?? 'localhost'}:${port}${PATHS.metrics}`;
  logger.info({ metricsUrl }, `Metrics on ${metricsUrl} (METRICS_PORT)`);
}

/** What start() has opened, for the drain to close again. */
type Started = Awaited<ReturnType<typeof start>>;

async function start(config: ServingConfig, logger: Logger) {
  const link = workerLink();
  // Before the server exists: the server span comes from patching node:http.
  const tracing = config.tracing
    ? await (await import('../telemetry/tracing.js')).startTracing(
        config.tracing,
        config.propagators,
        [PATHS.health, PATHS.readiness, PATHS.metrics],
        logger,
      )
    : undefined;
  const metrics = createMetrics({
    processMetrics: true,
    ...(link ? { defaultLabels: { worker: link.id } } : {}),
  });
  if (link) {
    // A worker answers the primary's aggregation only once an AggregatorRegistry exists in it.
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([metrics.registry]);
  }
  const client = new UpstreamClient({
    baseUrl: config.upstreamUrl,
    ...config.upstream,
    onCall: (call) => metrics.observeUpstreamCall(call),
    onBreakerChange: (state, route) => metrics.observeBreaker(state, route),
    tracer: tracing?.tracer,
  });
  const redis = await connectSharedRedis(config, logger, metrics);
  const health = createHealth({
    probeUrl: config.readinessCheckUpstream ? config.upstreamUrl : undefined,
    gate: link?.clusterReady,
    redis,
  });
  const rateLimiter = await createRateLimiter(config.rateLimit, logger, link !== undefined, redis);
  const redisReady = redis?.ready(5_000);
  const credentials = createCredentialPolicy(config);
  const refreshes = createRefreshes({
    onEnd: (route, outcome) => metrics.countRefresh(route, outcome),
  });
  const subscriptions = createSubscriptions({ limits: config.subscriptions, metrics, logger });
  const yoga = createApp({
    config,
    credentials,
    refreshes,
    subscriptions,
    // A lease outlives one look-up (DNS_TIMEOUT_MS), so a process that died frees it soon after.
    dnsWatchStore:
      redis && createRedisDnsWatchStore(redis, { leaseMs: config.dns.timeoutMs + 1_000 }),
    client,
    logger,
    metrics,
    health,
    rateLimiter,
    ...createStores(config, redis, link),
    metricsSource: config.metricsPort === undefined ? link?.metrics : null,
    tracing,
  });
  // Draining is the readiness plugin's (`Connection: close`); the server only counts requests.
  const server = createHttpServer(config, yoga);
  await listenOn(server, config.port, config.host, SERVER_VARIABLES);
  const metricsServer =
    config.metricsPort !== undefined && !link
      ? await serveMetrics(config, config.metricsPort, registrySource(metrics.registry))
      : undefined;
  return {
    server,
    metricsServer,
    client,
    health,
    rateLimiter,
    redis,
    redisReady,
    tracing,
    credentials,
    refreshes,
    subscriptions,
  };
}

/** The process's one Redis connection; none when nothing would use it. */
async function connectSharedRedis(
  config: Config,
  logger: Logger,
  metrics: Metrics,
): Promise<RedisConnection | undefined> {
  const { redisUrl, redisTimeoutMs, redisKeyPrefix, points } = config.rateLimit;
  const used = points > 0 || config.apq.enabled || config.responseCache.enabled;
  if (!redisUrl || !used) return undefined;
  const redis = await connectRedis(redisUrl, {
    timeoutMs: redisTimeoutMs,
    keyPrefix: redisKeyPrefix,
    logger,
    onAvailability: (available) => metrics.observeRedis(available),
    onMiss: (reason) => metrics.countRedisMiss(reason),
  });
  // Unavailable until it first answers.
  metrics.observeRedis(redis.available);
  return redis;
}

/** With REDIS_URL, whether the repository list's kept ranges have their tier in Redis. */
const rangesInRedis = ({ responseCache }: Config) =>
  responseCache.enabled && responseCache.rangeRedisBytes > 0;

function createStores(
  config: Config,
  redis: RedisConnection | undefined,
  link: ReturnType<typeof workerLink>,
) {
  const { apq, responseCache } = config;
  const responseStore = !responseCache.enabled
    ? undefined
    : redis
      ? createRedisResponseStore(redis, {
          redisBytes: responseCache.redisBytes,
          memoryBytes: responseCache.maxBytes,
        })
      : createMemoryResponseStore(responseCache.maxBytes);
  return {
    apqStore: !apq.enabled
      ? undefined
      : redis
        ? createRedisApqStore(redis, {
            ttlS: apq.ttlS,
            maxBytes: apq.redisBytes,
            memoryBytes: apq.cacheBytes,
          })
        : createMemoryApqStore(apq.cacheBytes),
    responseStore,
    sharedRanges:
      redis && rangesInRedis(config)
        ? createRedisRanges(redis, { redisBytes: responseCache.rangeRedisBytes })
        : undefined,
    rangeCache: createProcessRanges(config, link, responseStore),
  };
}

/**
 * The kept ranges of this process; with workers, a caller's mutation reaches every worker's, and
 * the answers each worker keeps in memory for the caller, in the same message.
 */
function createProcessRanges(
  config: Config,
  link: ReturnType<typeof workerLink>,
  answers: ResponseStore | undefined,
) {
  if (!config.responseCache.enabled) return undefined;
  const forgetElsewhere = link?.forgetElsewhere;
  const ranges = createRangeCache(config.responseCache.maxBytes, { forgetElsewhere });
  link?.onForget((keys) => {
    ranges.forgetKey(keys.ranges);
    if (keys.answers !== undefined) answers?.forgetHere(keys.answers);
  });
  return ranges;
}

async function announce(config: ServingConfig, logger: Logger, started: Started): Promise<void> {
  const { server, rateLimiter, redisReady, credentials } = started;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `http://${config.host ?? 'localhost'}:${port}/graphql`;
  logger.info(
    { url, port, version: VERSION, node: process.version },
    `GraphQL facade ${VERSION} listening on ${url}${config.graphiql ? ' (GraphiQL in a browser)' : ''}`,
  );
  const upstream = new URL(config.upstreamUrl).origin;
  logger.info({ upstream }, `Upstream: ${upstream}`);
  if (started.metricsServer) announceMetrics(config, logger, started.metricsServer);
  if (credentials.mode === 'service-key' && !credentials.acceptsClient) {
    logger.warn(
      "SERVICE-KEY MODE WITHOUT A CLIENT CHECK (ALLOW_ANONYMOUS_SERVICE_KEY=true): anyone who can reach this port acts with the facade's upstream key",
    );
  }
  if (!rateLimiter) logger.warn('Rate limiting is off (RATE_LIMIT_POINTS=0)');
  if (started.redis && redisReady) {
    const { where } = started.redis;
    const shared = [
      rateLimiter && 'rate limits',
      config.apq.enabled && 'APQ documents',
      config.responseCache.enabled && 'answers',
      rangesInRedis(config) && "the repository list's kept ranges",
    ].filter(Boolean);
    const what = `${shared.slice(0, -1).join(', ')}${shared.length > 1 ? ' and ' : ''}${shared.at(-1)}`;
    const fields = {
      store: 'redis',
      redis: where,
      shared,
      prefix: config.rateLimit.redisKeyPrefix,
    };
    if (await redisReady)
      logger.info(
        { ...fields, answered: true },
        `${what.charAt(0).toUpperCase()}${what.slice(1)} shared in Redis at ${where} (keys ${config.rateLimit.redisKeyPrefix}*); Redis answered`,
      );
    else
      logger.error(
        { ...fields, answered: false },
        `${what.charAt(0).toUpperCase()}${what.slice(1)} to be shared in Redis at ${where}, which has not answered; each process counts and keeps in memory until it does`,
      );
  }
  const { documents, only } = config.persistedDocuments;
  if (documents) {
    logger.info(
      { trustedDocuments: documents.size, only },
      only
        ? `Only trusted documents run (${documents.size} in PERSISTED_DOCUMENTS)`
        : `${documents.size} trusted documents (PERSISTED_DOCUMENTS); other documents run too`,
    );
  }
}

/** SIGTERM and SIGINT drain as docs/operations.md#shutdown describes, then exit 0. */
function drainOnSignals(config: Config, logger: Logger, started: Started): void {
  const { server, metricsServer, client, health, rateLimiter, redis, tracing, refreshes } = started;
  const { subscriptions } = started;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    health.startDraining();
    logger.info({ signal, graceMs: config.shutdownGraceMs }, 'draining');
    // Each open stream gets its last event and completes, so its connection can close in time.
    void subscriptions.drain(config.shutdownGraceMs);
    // One deadline for the whole drain: connections, then the refreshes they may have started.
    const deadline = Date.now() + config.shutdownGraceMs;
    // net.Server#close: http.Server#close would also cut idle keep-alive connections.
    const closed = new Promise<void>((resolve) =>
      NetServer.prototype.close.call(server, () => resolve()),
    );
    const grace = new Promise<'timeout'>((resolve) =>
      setTimeout(() => resolve('timeout'), config.shutdownGraceMs),
    );
    void Promise.race([closed, grace]).then(async (outcome) => {
      if (outcome === 'timeout') {
        logger.warn('grace period over; closing remaining connections');
        server.closeAllConnections();
      }
      // Scraped until the drain is over, so the metrics cover the last requests.
      metricsServer?.close();
      metricsServer?.closeAllConnections();
      await refreshes.drain(Math.max(0, deadline - Date.now()));
      await Promise.allSettled([client.close(), rateLimiter?.close()]);
      redis?.disconnect();
      // Last: the spans of the requests that just drained are exported before the exit.
      await tracing?.shutdown().catch(() => {});
      logger.info('stopped');
      logger.flush(() => process.exit(0));
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function main() {
  const config = readConfig();
  const logger = createLogger(config.logLevel, undefined, config.tracing !== undefined);
  // Until the server listens, whatever fails is a start-up failure: one stderr line, exit 1.
  const failedToStart = (error: unknown): never => {
    if (error instanceof StartupError) failStartup(`Cannot start: ${error.message}`);
    // Some values are only judged when used (DNS_SERVERS by c-ares): still configuration errors.
    if (error instanceof ConfigError) failStartup(`Invalid configuration: ${error.message}`);
    failStartup(unexpectedFailure(error, config));
  };
  let onFailure: (error: unknown, kind: string) => void = failedToStart;
  process.on('uncaughtException', (error) => onFailure(error, 'uncaught exception'));
  process.on('unhandledRejection', (error) => onFailure(error, 'unhandled rejection'));

  // Once, in the process that starts everything: a worker's listen goes through the primary.
  if (cluster.isPrimary) {
    await checkPortFree(config.port, config.host, SERVER_VARIABLES).catch(failedToStart);
    if (config.metricsPort !== undefined) {
      await checkPortFree(config.metricsPort, config.host, METRICS_VARIABLES).catch(failedToStart);
    }
  }
  if (config.workers > 1 && cluster.isPrimary) {
    const clusterMetrics = runPrimary(config, logger, config.workers);
    // The primary holds the aggregate, so it serves a METRICS_PORT itself.
    if (config.metricsPort !== undefined) {
      const metricsServer = await serveMetrics(config, config.metricsPort, clusterMetrics).catch(
        failedToStart,
      );
      announceMetrics(config, logger, metricsServer);
    }
    return;
  }
  const started = await start(config, logger).catch(failedToStart);
  // Once serving, a crash is the log's: a fatal line with its stack, flushed before exiting.
  onFailure = (error, kind) => {
    logger.fatal({ err: error }, kind);
    logger.flush(() => process.exit(1));
  };
  drainOnSignals(config, logger, started);
  await announce(config, logger, started);
}

await main();
