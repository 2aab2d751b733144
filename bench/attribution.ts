// `npm run bench -- --attribution` runs this on core 0 (the sandbox on core 1): CPU per page
// request of the facade in this process through `yoga.fetch`, whole and with one layer at a time
// left out (createApp's benchmark-only `omit`), alternating, the least of several rounds each.
// In one process, every variant runs on code V8 has already optimised for the others, so the
// figures are not a warm-up's; no socket is involved, so the HTTP adapter is measured apart.
import { createServer } from 'node:http';
import pino from 'pino';
import { Pool } from 'undici';
import { createApp, type Layer } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createHealth } from '../src/observability/health.js';
import { createLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';
import { createRateLimiter } from '../src/plugins/request/use-rate-limit.js';
import { UpstreamClient } from '../src/upstream/client.js';

const sandboxUrl = process.argv[2] as string;
const REQUESTS = Number(process.env.BENCH_ATTRIBUTION_REQUESTS ?? 2_000);
const ROUNDS = Number(process.env.BENCH_ATTRIBUTION_ROUNDS ?? 3);
const CONCURRENCY = 32;
const PAGE = JSON.stringify({
  query:
    '{ repositories(limit: 20) { total offset hasNextPage items { id defaultBranch branches { name target isDefault } tags { name target message } } } }',
});

// 'rateLimit' is main.ts's rate limiter (a dependency of createApp), the others createApp's layers.
const LAYERS = [
  'requestLog',
  'metrics',
  'cacheControl',
  'readiness',
  'csrf',
  'rateLimit',
  'bodySize',
  'mediaType',
  'limits',
  'operationTypes',
  'listLimits',
  'cost',
  'upstreamCalls',
  'jit',
  'parseCache',
] as const;

const config = loadConfig({ UPSTREAM_URL: sandboxUrl, NODE_ENV: 'production' });
// As main.ts logs, asynchronously, to a sink.
const logger = createLogger('info', pino.destination({ dest: '/dev/null', sync: false }));

// One client for every variant, as one process has one: it is not a layer that can be left out.
const metrics = createMetrics({ processMetrics: true });
const client = new UpstreamClient({
  baseUrl: sandboxUrl,
  ...config.upstream,
  onCall: (call) => metrics.observeUpstreamCall(call),
  onBreakerChange: (state) => metrics.observeBreaker(state),
});
let failed = 0;

async function variant(omitted: readonly string[]) {
  const rateLimiter = omitted.includes('rateLimit')
    ? undefined
    : await createRateLimiter({ ...config.rateLimit, points: 1e9, addressPoints: 1e9 }, logger);
  const omit = new Set(omitted.filter((name) => name !== 'rateLimit') as Layer[]);
  return createApp({ config, client, logger, metrics, health: createHealth(), rateLimiter, omit });
}
type App = Awaited<ReturnType<typeof variant>>;

/** CPU µs per request (user + system) of this process over `requests` page requests. */
async function cpuPerRequest(send: () => Promise<unknown>, requests = REQUESTS): Promise<number> {
  let left = requests;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await send();
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / requests;
}

const viaFetch = (app: App) => async () => {
  const response = await app.fetch('http://facade/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: PAGE,
  });
  const text = await response.text();
  if (!text.startsWith('{"data":{"repositories":{')) failed++;
};

const apps = new Map<string, App>([['whole', await variant([])]]);
for (const layer of LAYERS) apps.set(layer, await variant([layer]));

// Over HTTP: the same whole app behind node:http, the client in this process too; its CPU is
// subtracted by measuring the same client against a server that answers a fixed body.
const whole = apps.get('whole') as App;
const server = createServer(whole).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const fixedBody = await (
  await whole.fetch('http://facade/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: PAGE,
  })
).text();
const fixed = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(fixedBody));
}).listen(0, '127.0.0.1');
await new Promise((resolve) => fixed.once('listening', resolve));
const overHttp = (port: number) => {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONCURRENCY });
  return async () => {
    const response = await pool.request({
      method: 'POST',
      path: '/graphql',
      headers: { 'content-type': 'application/json' },
      body: PAGE,
    });
    await response.body.text();
  };
};
const port = (s: typeof server) => (s.address() as { port: number }).port;
const http = overHttp(port(server));
const fixedHttp = overHttp(port(fixed));

// Warm every path before anything counts.
for (const app of apps.values()) await cpuPerRequest(viaFetch(app), 3_000);
await cpuPerRequest(http, 3_000);
await cpuPerRequest(fixedHttp, 3_000);

// Each variant right after the whole app: a layer's cost is the median of those paired
// differences, so a change of the machine's load between rounds falls on both sides.
const differences = new Map<string, number[]>();
const wholes: number[] = [];
const add = (key: string, us: number) =>
  differences.set(key, [...(differences.get(key) ?? []), us]);
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, app] of apps) {
    if (name === 'whole') continue;
    const wholeNow = await cpuPerRequest(viaFetch(whole));
    wholes.push(wholeNow);
    add(name, wholeNow - (await cpuPerRequest(viaFetch(app))));
  }
  add('http', await cpuPerRequest(http));
  add('fixedHttp', await cpuPerRequest(fixedHttp));
}
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
const best = new Map([...differences].map(([key, values]) => [key, median(values)]));
const wholeUs = median(wholes);
const rows = [
  { layer: '(whole facade, yoga.fetch)', cpuUs: Math.round(wholeUs), ofWhole: 1 },
  {
    layer:
      'HTTP: node:http, Yoga Node adapter, sockets (over HTTP - fixed-body server - yoga.fetch)',
    cpuUs: Math.round((best.get('http') as number) - (best.get('fixedHttp') as number) - wholeUs),
    ofWhole: null,
  },
  ...LAYERS.map((layer) => {
    const us = best.get(layer) as number;
    return { layer, cpuUs: Math.round(us), ofWhole: Number((us / wholeUs).toFixed(3)) };
  }),
];
console.table(rows);
if (failed > 0) console.warn(`${failed} answers were not a page (upstream failures)`);
console.log(
  `over HTTP ${Math.round(best.get('http') as number)} µs/request incl. the client; the client against a fixed body ${Math.round(best.get('fixedHttp') as number)} µs`,
);
process.exit(0);
