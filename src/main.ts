import cluster from 'node:cluster';
import { createServer, type RequestListener, type Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { AggregatorRegistry } from 'prom-client';
import { createApp, PATHS } from './app.js';
import { createRedisResponseStore } from './cache/redis-store.js';
import { createRefreshes, type Refreshes } from './cache/refresh.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { type CredentialPolicy, createCredentialPolicy } from './credentials.js';
import { createHealth, type Health } from './http/health.js';
import { type MetricsSource, metricsListener, registrySource } from './http/use-metrics.js';
import { runPrimary, type WorkerLink, workerLink } from './process/cluster.js';
import { compileHttpParser } from './process/memory.js';
import {
  errorName,
  listenFailure,
  StartupError,
  unexpectedFailure,
} from './process/startup-errors.js';
import { connectRedis, type RedisConnection } from './redis.js';
import { type ApqStore, createMemoryApqStore, createRedisApqStore } from './security/use-apq.js';
import { createRateLimiter, type RateLimiter } from './security/use-rate-limit.js';
import { VERSION } from './telemetry/build-info.js';
import { createLogger, type Logger } from './telemetry/logger.js';
import { createMetrics } from './telemetry/metrics.js';
import type { Tracing } from './telemetry/tracing.js';
import { UpstreamClient } from './upstream/client.js';

/** Before any logger exists (the log level is configuration too), and for start-up failures. */
function failStartup(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

/** The configuration of a process that serves: unlike an app built by a test, it needs an upstream. */
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

/**
 * Listens, or fails with the start-up line that names the variable behind the port or the host.
 * `node:http` servers are `net` servers, so the probe below and the real servers share it.
 */
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

/**
 * Binds the port for a moment and lets it go: a busy port fails start-up at once, not after the
 * parser compile and the workers. The real listen still reports a port taken in between.
 */
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

/** Where the URL shows a password (REDIS_URL may), only its scheme, host and port are logged. */
function safeOrigin(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}`;
}

function warnAboutCredentials(credentials: CredentialPolicy, logger: Logger): void {
  if (credentials.mode === 'service-key' && !credentials.acceptsClient) {
    logger.warn(
      "SERVICE-KEY MODE WITHOUT A CLIENT CHECK (ALLOW_ANONYMOUS_SERVICE_KEY=true): anyone who can reach this port acts with the facade's upstream key",
    );
  }
}

/**
 * Log lines are written asynchronously (off the request path): flush them before exiting. The
 * flush is bounded, and a closed or stalled stdout drops the lines rather than hold the process
 * (src/telemetry/logger.ts).
 */
function exitAfterFlush(logger: Logger, code: number): void {
  logger.flush(() => process.exit(code));
}

// Node reads a whole chunk at once however many pipelined requests it holds, and runs each, while
// their answers wait in memory for the ones before them: a client that sends many and reads none
// holds that memory for as long as it likes. More than this many in progress on one connection
// cuts it; pipelining clients send far fewer.
const MAX_REQUESTS_IN_PROGRESS = 16;
const HEADERS_TIMEOUT_MS = 10_000;

/**
 * The HTTP server, and what one client may hold of it: a connection for as long as it takes to
 * send a request, the process's connections (a slow sender holds one for nothing), and requests
 * in progress on one connection.
 */
function createHttpServer(config: Config, handler: RequestListener): Server {
  const { requestTimeoutMs, maxConnections } = config.server;
  // The count is the connection's: keyed by its socket, it goes when the socket goes.
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
  await listenOn(server, port, config.host, { port: 'METRICS_PORT', host: 'HOST' });
  return server;
}

function announceMetrics(config: Config, logger: Logger, server: Server): void {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.metricsPort;
  const metricsUrl = `http://${config.host ?? 'localhost'}:${port}${PATHS.metrics}`;
  logger.info({ metricsUrl }, `Metrics on ${metricsUrl} (METRICS_PORT)`);
}

/** What main() has started: the process must close these again on the way out. */
interface Started {
  server: Server;
  /** Set when METRICS_PORT is, except in a cluster worker: there the primary serves it. */
  metricsServer: Server | undefined;
  /** Set in a cluster worker. */
  link: WorkerLink | undefined;
  client: UpstreamClient;
  health: Health;
  rateLimiter: RateLimiter | undefined;
  /** The process's one Redis connection (rate limit, APQ, response cache), with REDIS_URL. */
  redis: RedisConnection | undefined;
  redisReady: Promise<boolean> | undefined;
  apqStore: ApqStore | undefined;
  upstreamUrl: string;
  tracing: Tracing | undefined;
  credentials: CredentialPolicy;
  refreshes: Refreshes;
}

async function start(config: ServingConfig, logger: Logger): Promise<Started> {
  // First: its one-off memory must not come on top of the app's.
  await compileHttpParser();
  const link = workerLink();
  // Before the server exists: the server span comes from patching node:http. Without an
  // endpoint the SDK is not even loaded.
  const tracing = config.tracing
    ? await (await import('./telemetry/tracing.js')).startTracing(
        config.tracing,
        config.propagators,
        [PATHS.health, PATHS.readiness, PATHS.metrics],
        logger,
      )
    : undefined;
  const { upstreamUrl } = config;
  const metrics = createMetrics({
    processMetrics: true,
    ...(link ? { defaultLabels: { worker: link.id } } : {}),
  });
  if (link) {
    // prom-client's cluster aggregation asks each worker for this registry's metrics; a worker
    // answers only once an AggregatorRegistry exists in it (its constructor adds the listener).
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([metrics.registry]);
  }
  const client = new UpstreamClient({
    baseUrl: upstreamUrl,
    ...config.upstream,
    onCall: (call) => metrics.observeUpstreamCall(call),
    onBreakerChange: (state, route) => metrics.observeBreaker(state, route),
    tracer: tracing?.tracer,
  });
  // One connection for every user of Redis, and none when nothing would use it.
  const usesRedis =
    config.rateLimit.points > 0 || config.apq.enabled || config.responseCache.enabled;
  const redis =
    config.rateLimit.redisUrl && usesRedis
      ? await connectRedis(config.rateLimit.redisUrl, {
          timeoutMs: config.rateLimit.redisTimeoutMs,
          logger,
          onAvailability: (available) => metrics.observeRedis(available),
          onMiss: (reason) => metrics.countRedisMiss(reason),
        })
      : undefined;
  if (redis) metrics.observeRedis(true);
  const health = createHealth({
    probeUrl: config.readinessCheckUpstream ? upstreamUrl : undefined,
    gate: link?.clusterReady,
    redis,
  });
  const rateLimiter = await createRateLimiter(config.rateLimit, logger, link !== undefined, redis);
  const redisReady = redis ? redisIsReady(redis.client, 5_000) : undefined;
  const apqStore = !config.apq.enabled
    ? undefined
    : redis
      ? createRedisApqStore(redis, {
          ttlS: config.apq.ttlS,
          maxBytes: config.apq.redisBytes,
          memoryBytes: config.apq.cacheBytes,
        })
      : createMemoryApqStore(config.apq.cacheBytes);
  const responseStore =
    redis && config.responseCache.enabled
      ? createRedisResponseStore(redis, {
          redisBytes: config.responseCache.redisBytes,
          memoryBytes: config.responseCache.maxBytes,
        })
      : undefined;
  const credentials = createCredentialPolicy(config);
  const refreshes = createRefreshes({
    onEnd: (route, outcome) => metrics.countRefresh(route, outcome),
  });
  const yoga = createApp({
    config,
    credentials,
    refreshes,
    client,
    logger,
    metrics,
    health,
    rateLimiter,
    apqStore,
    responseStore,
    metricsSource: config.metricsPort === undefined ? link?.metrics : null,
    tracing,
  });

  // Draining (SIGTERM) is the readiness plugin's: it marks answers `Connection: close`. The only
  // per-response bookkeeping here is createHttpServer's count of requests in progress.
  const server = createHttpServer(config, yoga);
  await listenOn(server, config.port, config.host, { port: 'PORT', host: 'HOST' });
  const metricsServer =
    config.metricsPort !== undefined && !link
      ? await serveMetrics(config, config.metricsPort, registrySource(metrics.registry))
      : undefined;
  return {
    server,
    metricsServer,
    link,
    client,
    health,
    rateLimiter,
    redis,
    redisReady,
    apqStore,
    upstreamUrl,
    tracing,
    credentials,
    refreshes,
  };
}

/** Resolves true once Redis answers, false after `timeoutMs`. */
function redisIsReady(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function announce(config: Config, logger: Logger, started: Started): Promise<void> {
  const { server, rateLimiter, redisReady, apqStore, upstreamUrl } = started;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `http://${config.host ?? 'localhost'}:${port}/graphql`;
  logger.info(
    { url, port, version: VERSION, node: process.version },
    `GraphQL facade ${VERSION} listening on ${url}${config.graphiql ? ' (GraphiQL in a browser)' : ''}`,
  );
  const upstream = new URL(upstreamUrl).origin;
  logger.info({ upstream }, `Upstream: ${upstream}`);
  if (started.metricsServer) announceMetrics(config, logger, started.metricsServer);
  warnAboutCredentials(started.credentials, logger);
  if (!rateLimiter) logger.warn('Rate limiting is off (RATE_LIMIT_POINTS=0)');
  // redisReady is unset when REDIS_URL is, or when neither the rate limit nor APQ would use it.
  if (config.rateLimit.redisUrl && redisReady) {
    const where = safeOrigin(config.rateLimit.redisUrl);
    const shared = [rateLimiter && 'rate limits', apqStore && 'APQ documents'].filter(Boolean);
    const what = shared.join(' and ');
    if (await redisReady)
      logger.info(
        { store: 'redis', redis: where },
        `${what.charAt(0).toUpperCase()}${what.slice(1)} shared in Redis at ${where}`,
      );
    else
      logger.error(
        { store: 'redis', redis: where },
        `Redis at ${where} not reachable yet; each replica counts and stores alone until it is`,
      );
  }
  if (config.persistedDocuments.documents) {
    logger.info(
      {
        trustedDocuments: config.persistedDocuments.documents.size,
        only: config.persistedDocuments.only,
      },
      config.persistedDocuments.only
        ? `Only trusted documents run (${config.persistedDocuments.documents.size} in PERSISTED_DOCUMENTS)`
        : `${config.persistedDocuments.documents.size} trusted documents (PERSISTED_DOCUMENTS); other documents run too`,
    );
  }
}

/**
 * SIGTERM: readiness turns 503 and the listener closes, but open connections are not cut: each
 * ends after its next answer, which says `Connection: close`, or when it has stayed idle for the
 * keep-alive timeout the server announced. Closing an idle keep-alive connection at once (what
 * http.Server#close does) resets requests that clients are already sending on it.
 */
function drainOnSignals(config: Config, logger: Logger, started: Started): void {
  const { server, metricsServer, client, health, rateLimiter, redis, tracing, refreshes } = started;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    health.startDraining();
    logger.info({ signal, graceMs: config.shutdownGraceMs }, 'draining');
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
      // Background refreshes end before the client closes, within what is left of the grace.
      await refreshes.drain(config.shutdownGraceMs);
      await Promise.allSettled([client.close(), rateLimiter?.close()]);
      redis?.disconnect();
      // Last: the spans of the requests that just drained are exported before the exit.
      await tracing?.shutdown().catch(() => {});
      logger.info('stopped');
      exitAfterFlush(logger, 0);
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
    await checkPortFree(config.port, config.host, { port: 'PORT', host: 'HOST' }).catch(
      failedToStart,
    );
    if (config.metricsPort !== undefined) {
      await checkPortFree(config.metricsPort, config.host, {
        port: 'METRICS_PORT',
        host: 'HOST',
      }).catch(failedToStart);
    }
  }
  if (config.workers > 1 && cluster.isPrimary) {
    const clusterMetrics = runPrimary(config, logger, config.workers);
    // The primary holds the aggregate, so it serves a METRICS_PORT itself, until it exits.
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
    exitAfterFlush(logger, 1);
  };
  drainOnSignals(config, logger, started);
  await announce(config, logger, started);
}

await main();
