// `npm run bench`: the facade against direct REST, each a separate process, measured alternately.
// The facade is pinned to core 0; the sandbox and this load generator share core 1 (`taskset`),
// so the ratio compares one core of facade with one core of upstream.
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { freePort } from '../test/helpers/net.js';
import { build, cpuSeconds, peakRssMb, startFacade, startSandbox } from './processes.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
// `npm run bench -- --workers 2`: the facade as WORKERS=2 on both cores (one process on core 0
// otherwise).
const workersFlag = process.argv.indexOf('--workers');
const WORKERS = workersFlag > 0 ? Number(process.argv[workersFlag + 1]) : 1;
if (!Number.isInteger(WORKERS) || WORKERS < 1) throw new Error('--workers takes a whole number');

const PAGE_FIELDS =
  'total offset hasNextPage items { id defaultBranch branches { name target isDefault } tags { name target message } }';
const gqlBody = (query: string) => JSON.stringify({ query });
const scenarios = {
  page: gqlBody(`{ repositories(limit: 20) { ${PAGE_FIELDS} } }`),
  fiveAliases: gqlBody(
    `{ ${[1, 2, 3, 4, 5].map((i) => `a${i}: repositories(limit: 20) { ${PAGE_FIELDS} }`).join(' ')} }`,
  ),
  threeAdjacentPages: gqlBody(
    `{ ${[0, 1, 2].map((i) => `p${i}: repositories(limit: 20, offset: ${i * 20}) { ${PAGE_FIELDS} }`).join(' ')} }`,
  ),
};

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  requests: number;
  /** CPU seconds (user + system) the serving process spent on the run. */
  cpuS: number;
  /** Response bytes received (headers included). */
  bytes: number;
}

/** `servedBy`: the process whose CPU the run is charged to (the sandbox, or the facade). */
async function load(
  servedBy: number,
  url: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<Measured> {
  const cpuBefore = cpuSeconds(servedBy);
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_S,
    method: body ? 'POST' : 'GET',
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body ? { body } : {}),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    requests: result.requests.total,
    cpuS: cpuSeconds(servedBy) - cpuBefore,
    bytes: result.throughput.total,
  };
}

const average = (runs: Measured[], key: keyof Measured) =>
  runs.reduce((sum, run) => sum + run[key], 0) / runs.length;
const summary = (runs: Measured[]) => ({
  // CPU per request of the serving process: what one core of it can serve, whatever the load
  // generator (which shares the sandbox's core) leaves it.
  cpuUsPerRequest: Math.round(
    (1e6 * runs.reduce((sum, run) => sum + run.cpuS, 0)) /
      runs.reduce((sum, run) => sum + run.requests, 0),
  ),
  rps: Math.round(average(runs, 'rps')),
  p50: average(runs, 'p50'),
  p99: average(runs, 'p99'),
  errors: average(runs, 'errors') + average(runs, 'non2xx'),
  bytesPerResponse: Math.round(
    runs.reduce((sum, run) => sum + run.bytes, 0) /
      runs.reduce((sum, run) => sum + run.requests, 0),
  ),
});

async function upstreamCallsPerOperation(sandboxUrl: string, graphqlUrl: string, body: string) {
  await fetch(`${sandboxUrl}/__sandbox/requests`, { method: 'DELETE' });
  const operations = 20;
  for (let i = 0; i < operations; i++) {
    const response = await fetch(graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const json = (await response.json()) as { errors?: unknown };
    if (json.errors) throw new Error(`benchmark operation failed: ${JSON.stringify(json.errors)}`);
  }
  const counts = (await (await fetch(`${sandboxUrl}/__sandbox/counts`)).json()) as {
    counts: Record<string, number>;
  };
  return (counts.counts['GET /git/v1/repo'] ?? 0) / operations;
}

async function main() {
  build();
  const [sandboxPort, facadePort] = [await freePort(), await freePort()];
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const graphqlUrl = `http://127.0.0.1:${facadePort}/graphql`;
  const children: ChildProcess[] = [];
  try {
    const sandbox = await startSandbox(sandboxPort, { SANDBOX_REPOSITORIES: '1000' });
    children.push(sandbox);
    // Production settings, defaults otherwise (rate limit on), request logs to /dev/null.
    const facade = await startFacade(facadePort, sandboxUrl, {}, WORKERS);
    children.push(facade);

    const calls = {
      page: await upstreamCallsPerOperation(sandboxUrl, graphqlUrl, scenarios.page),
      fiveAliases: await upstreamCallsPerOperation(sandboxUrl, graphqlUrl, scenarios.fiveAliases),
      threeAdjacentPages: await upstreamCallsPerOperation(
        sandboxUrl,
        graphqlUrl,
        scenarios.threeAdjacentPages,
      ),
    };

    // Warm both paths (JIT, pools, caches) before anything is counted.
    await autocannon({
      url: `${sandboxUrl}/git/v1/repo?limit=20`,
      connections: CONNECTIONS,
      duration: 1,
    });
    await autocannon({
      url: graphqlUrl,
      connections: CONNECTIONS,
      duration: 10,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: scenarios.page,
    });

    const runs: Record<string, Measured[]> = {
      direct: [],
      page: [],
      fiveAliases: [],
      threeAdjacentPages: [],
      pageGzip: [],
      pageBr: [],
    };
    for (let round = 0; round < ROUNDS; round++) {
      runs.direct?.push(await load(sandbox.pid as number, `${sandboxUrl}/git/v1/repo?limit=20`));
      runs.page?.push(await load(facade.pid as number, graphqlUrl, scenarios.page));
    }
    runs.fiveAliases?.push(await load(facade.pid as number, graphqlUrl, scenarios.fiveAliases));
    runs.threeAdjacentPages?.push(
      await load(facade.pid as number, graphqlUrl, scenarios.threeAdjacentPages),
    );
    // The page again, compressed: what the bytes saved cost the facade in CPU.
    runs.pageGzip?.push(
      await load(facade.pid as number, graphqlUrl, scenarios.page, { 'accept-encoding': 'gzip' }),
    );
    runs.pageBr?.push(
      await load(facade.pid as number, graphqlUrl, scenarios.page, { 'accept-encoding': 'br' }),
    );

    const direct = summary(runs.direct ?? []);
    const rows = Object.entries(runs).map(([name, measured]) => {
      const s = summary(measured);
      return {
        scenario: name,
        rps: s.rps,
        ratioToDirect: Number((s.rps / direct.rps).toFixed(3)),
        p50Ms: s.p50,
        p99Ms: s.p99,
        errors: s.errors,
        upstreamCallsPerOp:
          name === 'direct' ? 1 : (calls[name as keyof typeof calls] ?? calls.page),
        bytesPerResponse: s.bytesPerResponse,
        cpuUsPerRequest: s.cpuUsPerRequest,
        // Requests one core of the serving process can answer, and that against the sandbox's.
        perCoreRps: Math.round(1e6 / s.cpuUsPerRequest),
        perCoreRatio: Number((direct.cpuUsPerRequest / s.cpuUsPerRequest).toFixed(3)),
      };
    });
    const results = {
      date: new Date().toISOString(),
      node: process.version,
      connections: CONNECTIONS,
      durationS: DURATION_S,
      rounds: ROUNDS,
      workers: WORKERS,
      facadePeakRssMb: peakRssMb(facade.pid as number),
      rows,
    };
    console.table(rows);
    console.log(`facade peak RSS: ${results.facadePeakRssMb} MB`);
    writeFileSync(
      new URL('./results.json', import.meta.url),
      `${JSON.stringify(results, null, 2)}\n`,
    );
    if (direct.rps < 20_000)
      console.warn(
        `warning: direct baseline ${direct.rps} req/s is under 20,000 (autocannon shares the sandbox's core); ` +
          `the sandbox alone serves ${Math.round(1e6 / direct.cpuUsPerRequest)} per CPU-second, which perCoreRatio compares against`,
      );
  } finally {
    for (const child of children) child.kill('SIGTERM');
  }
}

await main();
