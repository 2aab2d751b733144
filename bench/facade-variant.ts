// The facade as src/main.ts builds it (one process, production settings from the environment),
// with the layers named in BENCH_OMIT (comma-separated) left out: what `npm run bench --
// --attribution` measures each layer's cost with. Read by the benchmark only; src/ never sees
// BENCH_OMIT, so no deployment can turn a layer off with it.
import { createServer } from 'node:http';
import { createApp, type Layer } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createHealth } from '../src/observability/health.js';
import { createLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';
import { createRateLimiter } from '../src/plugins/request/use-rate-limit.js';
import { UpstreamClient } from '../src/upstream/client.js';

const omitted = (process.env.BENCH_OMIT ?? '').split(',').filter(Boolean);
// 'rateLimit' is a dependency main.ts passes, not a plugin of createApp's list.
const omitRateLimit = omitted.includes('rateLimit');
const omit = new Set(omitted.filter((name) => name !== 'rateLimit') as Layer[]);

const config = loadConfig();
const logger = createLogger(config.logLevel);
const metrics = createMetrics({ processMetrics: true });
const client = new UpstreamClient({
  baseUrl: config.upstreamUrl as string,
  ...config.upstream,
  onCall: (call) => metrics.observeUpstreamCall(call),
  onBreakerChange: (state) => metrics.observeBreaker(state),
});
const rateLimiter = omitRateLimit ? undefined : await createRateLimiter(config.rateLimit, logger);
const yoga = createApp({
  config,
  client,
  logger,
  metrics,
  health: createHealth(),
  rateLimiter,
  omit,
});
createServer(yoga).listen(config.port, config.host);
process.on('SIGTERM', () => process.exit(0));
