// `npm run bench -- --attribution`'s facade with layers left out: the app main.ts builds (production
// settings, the memory rate limit, request lines to stdout), with the layers named in BENCH_OMIT
// (comma-separated: createApp's Layer names, and `rateLimit`) left out. Benchmark only, never
// deployed: createApp's `omit` is not read from the environment anywhere else. Run compiled
// (`npm run build` puts it in dist/bench/lean.js), as the facade is.
import { createServer } from 'node:http';
import { createApp, type Layer } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createRateLimiter } from '../src/security/use-rate-limit.js';
import { createLogger } from '../src/telemetry/logger.js';
import { createMetrics } from '../src/telemetry/metrics.js';
import { UpstreamClient } from '../src/upstream/client.js';

const omitted = (process.env.BENCH_OMIT ?? '').split(',').filter(Boolean);
const config = loadConfig({ ...process.env, NODE_ENV: 'production' });
const logger = createLogger(config.logLevel);
const metrics = createMetrics({ processMetrics: true });
const client = new UpstreamClient({
  baseUrl: process.env.UPSTREAM_URL as string,
  ...config.upstream,
  onCall: (call) => metrics.observeUpstreamCall(call),
  onBreakerChange: (state, route) => metrics.observeBreaker(state, route),
});
const rateLimiter = omitted.includes('rateLimit')
  ? undefined
  : await createRateLimiter(config.rateLimit, logger);
const app = createApp({
  config,
  client,
  logger,
  metrics,
  rateLimiter,
  omit: new Set(omitted.filter((name) => name !== 'rateLimit') as Layer[]),
});
const server = createServer(app);
server.keepAliveTimeout = 30_000;
server.listen(config.port, config.host);
process.on('SIGTERM', () => process.exit(0));
