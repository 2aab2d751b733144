// `npm run bench -- --attribution`'s facade with stages left out: the app main.ts builds (production
// settings, the memory rate limit, request lines to stdout), without the stages named in BENCH_OMIT
// (comma-separated names of src/app.ts's pipeline, and `parseCache` for Yoga's parse and
// validation cache), or with only those BENCH_KEEP names. The variants are built here, from the exported pipeline, so that the app
// itself has no switch for them. Run compiled (`npm run build:bench` puts it in bench/build/), as
// the facade is.
import { createServer } from 'node:http';
import { createYoga } from 'graphql-yoga';
import { appOptions, completeDeps, createPipeline } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createRateLimiter } from '../src/security/use-rate-limit.js';
import { createLogger } from '../src/telemetry/logger.js';
import { createMetrics } from '../src/telemetry/metrics.js';
import { UpstreamClient } from '../src/upstream/client.js';

const names = (list: string | undefined) => (list ?? '').split(',').filter(Boolean);
const omitted = new Set(names(process.env.BENCH_OMIT));
const config = loadConfig({ ...process.env, NODE_ENV: 'production' });
const logger = createLogger(config.logLevel);
const metrics = createMetrics({ processMetrics: true });
const client = new UpstreamClient({
  baseUrl: process.env.UPSTREAM_URL as string,
  ...config.upstream,
  onCall: (call) => metrics.observeUpstreamCall(call),
  onBreakerChange: (state, route) => metrics.observeBreaker(state, route),
});
const rateLimiter = await createRateLimiter(config.rateLimit, logger);
const deps = completeDeps({ config, client, logger, metrics, rateLimiter });
const pipeline = createPipeline(deps);

// A misspelt name would measure the whole app under another variant's name.
const known = new Set([...pipeline.map((stage) => stage.name), 'parseCache']);
for (const name of omitted) {
  if (!known.has(name)) throw new Error(`BENCH_OMIT: no stage named ${name}`);
}
// BENCH_KEEP instead names the stages to keep: every other stage of the pipeline is left out.
if (process.env.BENCH_KEEP !== undefined) {
  const kept = new Set(names(process.env.BENCH_KEEP));
  for (const name of kept) {
    if (!known.has(name)) throw new Error(`BENCH_KEEP: no stage named ${name}`);
  }
  for (const stage of pipeline) if (!kept.has(stage.name)) omitted.add(stage.name);
}

const app = createYoga({
  ...appOptions(
    deps,
    pipeline.filter((stage) => !omitted.has(stage.name)),
  ),
  // CORS is measured with the CSRF check it accompanies.
  ...(omitted.has('csrf') ? { cors: false } : {}),
  ...(omitted.has('parseCache') ? { parserAndValidationCache: false } : {}),
});
const server = createServer(app);
server.keepAliveTimeout = 30_000;
server.listen(config.port, config.host);
process.on('SIGTERM', () => process.exit(0));
