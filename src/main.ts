import { createServer } from 'node:http';
import { createApp } from './app.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { createHealth } from './observability/health.js';
import { createLogger, type Logger } from './observability/logger.js';
import { createMetrics } from './observability/metrics.js';
import { createRateLimiter } from './plugins/request/use-rate-limit.js';
import { UpstreamClient } from './upstream/client.js';

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // One line naming the variable, before any logger exists: the log level is configuration too.
    process.stderr.write(`Invalid configuration: ${error.message}\n`);
    process.exit(1);
  }
}

/** Where the URL shows a password (REDIS_URL may), only its scheme, host and port are logged. */
function safeOrigin(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}`;
}

function warnAboutCredentials(config: Config, logger: Logger): void {
  if (config.upstream.apiKey && !config.clientTokens?.length) {
    logger.warn(
      "SERVICE-KEY MODE WITHOUT A CLIENT CHECK (ALLOW_ANONYMOUS_SERVICE_KEY=true): anyone who can reach this port acts with the facade's upstream key",
    );
  }
}

/** Log lines are written asynchronously (off the request path): flush them before exiting. */
function exitAfterFlush(logger: Logger, code: number): void {
  logger.flush(() => process.exit(code));
  // A flush that never calls back must not keep a stopping process alive.
  setTimeout(() => process.exit(code), 1_000).unref();
}

async function main() {
  const config = readConfig();
  const logger = createLogger(config.logLevel);
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    exitAfterFlush(logger, 1);
  });
  process.on('unhandledRejection', (error) => {
    logger.fatal({ err: error }, 'unhandled rejection');
    exitAfterFlush(logger, 1);
  });

  // Without UPSTREAM_URL the facade embeds the sandbox, so a fresh clone runs with no setup. The
  // sandbox is a separate program: this is the one place the facade imports it, and only on demand.
  const sandbox = config.upstreamUrl
    ? undefined
    : await (await import('../sandbox/server.js')).startSandbox({
        port: config.sandbox.port,
        repositories: config.sandbox.repositories,
        dnsServers: config.dns.servers,
        dnsTimeoutMs: config.dns.timeoutMs,
        faults: config.sandbox.faults,
      });
  const upstreamUrl = config.upstreamUrl ?? (sandbox?.url as string);
  const metrics = createMetrics({ processMetrics: true });
  const client = new UpstreamClient({
    baseUrl: upstreamUrl,
    ...config.upstream,
    onCall: (call) => metrics.observeUpstreamCall(call),
    onBreakerChange: (state) => metrics.observeBreaker(state),
  });
  const health = createHealth({
    probeUrl: config.readinessCheckUpstream ? upstreamUrl : undefined,
  });
  const rateLimiter = await createRateLimiter(config.rateLimit, logger);
  const redisReady = rateLimiter?.store === 'redis' ? rateLimiter.ready(5_000) : undefined;
  const yoga = createApp({ config, client, logger, metrics, health, rateLimiter });

  // Draining (SIGTERM) is the readiness plugin's: it marks answers `Connection: close`. Keep
  // per-response bookkeeping out of here; it costs memory on every request of the process's life.
  const server = createServer(yoga);
  server.once('error', (error) => {
    logger.fatal({ err: error }, `cannot listen on ${config.host ?? '*'}:${config.port}`);
    exitAfterFlush(logger, 1);
  });

  server.listen(config.port, config.host, async () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const url = `http://${config.host ?? 'localhost'}:${port}/graphql`;
    logger.info({ url, port }, `GraphQL facade listening on ${url} (GraphiQL in a browser)`);
    if (sandbox) {
      logger.info(
        { upstream: 'sandbox', sandboxUrl: sandbox.url, faults: config.sandbox.faults },
        `Upstream: the built-in sandbox at ${sandbox.url} (set UPSTREAM_URL to front a real upstream)`,
      );
    } else {
      logger.info(
        { upstream: new URL(upstreamUrl).origin },
        `Upstream: ${new URL(upstreamUrl).origin}`,
      );
    }
    warnAboutCredentials(config, logger);
    if (!rateLimiter) logger.warn('Rate limiting is off (RATE_LIMIT_POINTS=0)');
    else if (config.rateLimit.redisUrl) {
      const where = safeOrigin(config.rateLimit.redisUrl);
      if (await redisReady)
        logger.info({ store: 'redis', redis: where }, `Rate limits shared in Redis at ${where}`);
      else
        logger.error(
          { store: 'redis', redis: where },
          `Redis at ${where} not reachable yet; each replica counts alone until it is`,
        );
    }
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    health.startDraining();
    logger.info({ signal, graceMs: config.shutdownGraceMs }, 'draining');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const grace = new Promise<'timeout'>((resolve) =>
      setTimeout(() => resolve('timeout'), config.shutdownGraceMs),
    );
    void Promise.race([closed, grace]).then(async (outcome) => {
      if (outcome === 'timeout') {
        logger.warn('grace period over; closing remaining connections');
        server.closeAllConnections();
      }
      await Promise.allSettled([client.close(), sandbox?.close(), rateLimiter?.close()]);
      logger.info('stopped');
      exitAfterFlush(logger, 0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

await main();
