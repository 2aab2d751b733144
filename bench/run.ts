// `npm run bench`: the facade against the floor (bench/floor.ts, a framework-free reference over
// the same sandbox), the floor's schema served by bare graphql-yoga (the framework path alone),
// and direct REST, each a separate process, measured alternately in one run. The facade and the
// two floors are pinned to core 0 (one of them is loaded at a time); the sandbox and this load
// generator share core 1 (`taskset`), so the ratios compare one core with one core.
//
// `npm run bench -- --attribution`: instead, bench/attribution.ts, the CPU per request of the
// floor, the floor on Yoga and the facade with layers left out, for docs/performance.md.
// `npm run bench -- --instructions`: instead, bench/instructions.ts, the same variants' instructions
// per request under valgrind, which move less than CPU time between runs.
// `npm run bench -- --profile`: instead, bench/profile.ts, where a list request's CPU time goes in
// each server, from V8's CPU profiles.
// Last, bench/cache.ts: the same documents with the upstream sending `max-age=30`, the facade's
// response cache against the floor and the floor on Yoga with Yoga's, and two scenarios of its
// own; `npm run bench -- --cache`: that part alone.
// `npm run bench -- --stale`: instead, bench/stale.ts, stale-while-revalidate and stale-if-error
// with and without their directive.
// `npm run bench -- --bounds`: instead, bench/bounds.ts, the heap the in-memory caches hold once
// filled, against RESPONSE_CACHE_BYTES, for docs/caching.md.
// `npm run bench -- --fleet`: instead, bench/fleet.ts, three replicas on one Redis behind HAProxy:
// upstream calls per page, an outage, a rolling restart and a Redis failover.
// `npm run bench -- --compare`: instead, bench/compare.ts, this facade against BENCH_BASE's, the
// three documents in alternating rounds.
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { freePort } from '../test/helpers/net.js';
import { attribution } from './attribution.js';
import { reportBounds } from './bounds.js';
import { cacheComparison } from './cache.js';
import { compare } from './compare.js';
import { fleetScenarios } from './fleet.js';
import { instructions } from './instructions.js';
import {
  bases,
  build,
  CONNECTIONS,
  cpuSeconds,
  peakRssMb,
  serverNodeFlags,
  serverNodeVersion,
  startFacade,
  startFloor,
  startSandbox,
} from './processes.js';
import { profile } from './profile.js';
import { staleScenarios } from './stale.js';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/** Seconds of load on the page that each server gets before anything is measured. */
const WARM_S = Number(process.env.BENCH_WARM_S ?? 25);
/** Seconds of the same load right before each measured run of a server (not counted). */
const REWARM_S = Number(process.env.BENCH_REWARM_S ?? 3);
// `npm run bench -- --workers 2`: the facade as WORKERS=2 on both cores (one process on core 0
// otherwise).
const workersFlag = process.argv.indexOf('--workers');
const WORKERS = workersFlag > 0 ? Number(process.argv[workersFlag + 1]) : 1;
if (!Number.isInteger(WORKERS) || WORKERS < 1) throw new Error('--workers takes a whole number');
const ATTRIBUTION = process.argv.includes('--attribution');
const INSTRUCTIONS = process.argv.includes('--instructions');
const PROFILE = process.argv.includes('--profile');
// `npm run bench -- --warm-up`: only the warm-up curves of a fresh facade and a fresh floor.
const WARM_UP_ONLY = process.argv.includes('--warm-up');
const CACHE_ONLY = process.argv.includes('--cache');
const BOUNDS = process.argv.includes('--bounds');
const STALE = process.argv.includes('--stale');
const FLEET = process.argv.includes('--fleet');
const COMPARE = process.argv.includes('--compare');

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
type Scenario = keyof typeof scenarios;

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  /** Mean latency in ms. */
  mean: number;
  errors: number;
  non2xx: number;
  requests: number;
  /** CPU seconds (user + system) the serving process spent on the run. */
  cpuS: number;
  /** Response bytes received (headers included). */
  bytes: number;
}

const load1 = () => Number(loadavg()[0]?.toFixed(2));

/** `servedBy`: the process whose CPU the run is charged to (the sandbox, the floor or the facade). */
async function load(
  servedBy: number,
  url: string,
  body?: string,
  connections = CONNECTIONS,
  headers: Record<string, string> = {},
): Promise<Measured> {
  const cpuBefore = cpuSeconds(servedBy);
  const result = await autocannon({
    url,
    connections,
    duration: DURATION_S,
    method: body ? 'POST' : 'GET',
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body ? { body } : {}),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    // autocannon records latencies in whole milliseconds, so a sub-millisecond round trip reads
    // as 0 or 1; with one connection, one request after another, the mean round trip is exactly
    // the run's duration over its requests.
    mean:
      connections === 1 ? (1000 * result.duration) / result.requests.total : result.latency.mean,
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
  mean: Number(average(runs, 'mean').toFixed(3)),
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

/** A GraphQL POST of `body` to `url` from CONNECTIONS clients for `seconds`. */
const graphqlLoad = (url: string, body: string, seconds: number) => ({
  url,
  connections: CONNECTIONS,
  duration: seconds,
  method: 'POST' as const,
  headers: { 'content-type': 'application/json' },
  body,
});

const warm = (url: string, body: string, seconds: number) =>
  autocannon(graphqlLoad(url, body, seconds));

/**
 * A process loaded from the moment it is ready: its CPU per request in each second since then,
 * against the steady state (the mean of the last third of the seconds).
 */
async function warmUpCurve(pid: number, url: string, body: string, seconds: number) {
  let answered = 0;
  let finished: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finished = resolve;
  });
  let failed = '';
  const instance = autocannon(graphqlLoad(url, body, seconds), (error, result) => {
    if (error || result.non2xx + result.errors + result.timeouts > 0)
      failed = error ? String(error) : `${result.non2xx} non-2xx answers, ${result.errors} errors`;
    finished();
  });
  instance.on('response', () => {
    answered++;
  });
  const curve: number[] = [];
  let [cpu, count] = [cpuSeconds(pid), 0];
  const timer = setInterval(() => {
    const [cpuNow, countNow] = [cpuSeconds(pid), answered];
    curve.push(Math.round((1e6 * (cpuNow - cpu)) / Math.max(1, countNow - count)));
    [cpu, count] = [cpuNow, countNow];
  }, 1_000);
  await done;
  clearInterval(timer);
  if (failed) throw new Error(`warm-up curve of ${url}: ${failed}`);
  const tail = curve.slice(Math.floor((curve.length * 2) / 3));
  const steady = tail.reduce((sum, us) => sum + us, 0) / Math.max(1, tail.length);
  const first2s = ((curve[0] ?? 0) + (curve[1] ?? 0)) / 2;
  return {
    cpuUsPerRequestBySecond: curve,
    steadyUs: Math.round(steady),
    first2sUs: Math.round(first2s),
    first2sToSteady: Number((first2s / steady).toFixed(2)),
  };
}

async function main() {
  if (BOUNDS) {
    reportBounds();
    return;
  }
  build();
  if (FLEET) {
    const rows = await fleetScenarios();
    writeFileSync(
      new URL('./results-fleet.json', import.meta.url),
      `${JSON.stringify({ date: new Date().toISOString(), node: serverNodeVersion, loadAverage: load1(), rows }, null, 2)}\n`,
    );
    return;
  }
  const [sandboxPort, facadePort, floorPort, yogaPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const graphqlUrl = `http://127.0.0.1:${facadePort}/graphql`;
  const floorUrl = `http://127.0.0.1:${floorPort}/graphql`;
  const yogaUrl = `http://127.0.0.1:${yogaPort}/graphql`;
  const children: ChildProcess[] = [];
  try {
    const sandbox = await startSandbox(sandboxPort, { SANDBOX_REPOSITORIES: '1000' });
    children.push(sandbox);
    if (ATTRIBUTION) {
      await attribution(sandboxUrl, scenarios.page);
      return;
    }
    if (PROFILE) {
      await profile(sandboxUrl, scenarios.page);
      return;
    }
    if (COMPARE) {
      const rows = await compare(sandboxUrl, scenarios);
      writeFileSync(
        new URL('./results-compare.json', import.meta.url),
        `${JSON.stringify({ date: new Date().toISOString(), node: serverNodeVersion, loadAverage: load1(), rows }, null, 2)}\n`,
      );
      return;
    }
    if (INSTRUCTIONS) {
      await instructions(sandboxUrl, scenarios.page);
      return;
    }
    if (STALE) {
      const stale = await staleScenarios(children);
      writeFileSync(
        new URL('./results-stale.json', import.meta.url),
        `${JSON.stringify({ date: new Date().toISOString(), node: serverNodeVersion, loadAverage: load1(), ...stale }, null, 2)}\n`,
      );
      return;
    }
    if (WARM_UP_ONLY) {
      await warmUpCurves(sandboxUrl, children);
      return;
    }
    const caching = () =>
      cacheComparison({
        connections: CONNECTIONS,
        workloads: scenarios,
        pageFields: PAGE_FIELDS,
        children,
      });
    if (CACHE_ONLY) {
      const cache = await caching();
      writeFileSync(
        new URL('./results-cache.json', import.meta.url),
        `${JSON.stringify({ date: new Date().toISOString(), node: serverNodeVersion, loadAverage: load1(), ...cache }, null, 2)}\n`,
      );
      return;
    }
    // Production settings, defaults otherwise (rate limit on), request logs to /dev/null.
    const facade = await startFacade(facadePort, sandboxUrl, {}, WORKERS);
    children.push(facade);
    const floor = await startFloor(floorPort, sandboxUrl);
    children.push(floor);
    const yoga = await startFloor(yogaPort, sandboxUrl, 'yoga');
    children.push(yoga);
    const servers: Record<string, { pid: number; url: string }> = {
      facade: { pid: facade.pid as number, url: graphqlUrl },
      floor: { pid: floor.pid as number, url: floorUrl },
      yoga: { pid: yoga.pid as number, url: yogaUrl },
    };
    // Each base checkout's facade, measured right after this one's.
    for (const base of bases) {
      const port = await freePort();
      const child = await startFacade(port, sandboxUrl, {}, WORKERS, base.script);
      children.push(child);
      servers[base.name] = { pid: child.pid as number, url: `http://127.0.0.1:${port}/graphql` };
    }
    const facades = ['facade', ...bases.map((base) => base.name)];

    const calls: Record<string, Record<Scenario, number>> = {};
    for (const [name, server] of Object.entries(servers)) {
      calls[name] = {
        page: await upstreamCallsPerOperation(sandboxUrl, server.url, scenarios.page),
        fiveAliases: await upstreamCallsPerOperation(sandboxUrl, server.url, scenarios.fiveAliases),
        threeAdjacentPages: await upstreamCallsPerOperation(
          sandboxUrl,
          server.url,
          scenarios.threeAdjacentPages,
        ),
      };
    }

    // Warm every path (JIT, pools, caches) before anything is counted.
    await autocannon({
      url: `${sandboxUrl}/git/v1/repo?limit=20`,
      connections: CONNECTIONS,
      duration: 1,
    });
    // Each server gets the same warm-up. V8 goes on optimising the facade for about 25 s of load
    // (`--trace-opt`: hundreds of functions in the first 10 s, a few dozen in the next 15), and a
    // shorter warm-up measured part of that compilation as the facade's cost.
    for (const server of Object.values(servers)) await warm(server.url, scenarios.page, WARM_S);

    const loadAverages: number[] = [load1()];
    const runs: Record<string, Measured[]> = {};
    const add = (key: string, measured: Measured) => {
      runs[key] ??= [];
      runs[key].push(measured);
    };
    // Each measured run follows a few seconds of the same load, for every server alike: a server
    // left idle while the others run starts its next load with code V8 has to optimise again
    // (docs/performance.md, "After idle"), and the order would decide who pays for it.
    const measure = async (name: string, body: string, connections?: number) => {
      const server = servers[name] as { pid: number; url: string };
      await warm(server.url, body, REWARM_S);
      return load(server.pid, server.url, body, connections);
    };
    for (let round = 0; round < ROUNDS; round++) {
      add('direct', await load(sandbox.pid as number, `${sandboxUrl}/git/v1/repo?limit=20`));
      add('floor page', await measure('floor', scenarios.page));
      add('yoga page', await measure('yoga', scenarios.page));
      for (const name of facades) add(`${name} page`, await measure(name, scenarios.page));
      loadAverages.push(load1());
    }
    for (const scenario of ['fiveAliases', 'threeAdjacentPages'] as const) {
      // A new document: compiled by graphql-jit on its first request, then optimised by V8.
      for (const server of Object.values(servers)) await warm(server.url, scenarios[scenario], 5);
      add(`floor ${scenario}`, await measure('floor', scenarios[scenario]));
      add(`yoga ${scenario}`, await measure('yoga', scenarios[scenario]));
      for (const name of facades)
        add(`${name} ${scenario}`, await measure(name, scenarios[scenario]));
    }
    loadAverages.push(load1());
    // One client, one request after another: the round trip, not the throughput.
    add(
      'direct round trip',
      await load(sandbox.pid as number, `${sandboxUrl}/git/v1/repo?limit=20`, undefined, 1),
    );
    add('floor round trip', await measure('floor', scenarios.page, 1));
    add('yoga round trip', await measure('yoga', scenarios.page, 1));
    for (const name of facades) add(`${name} round trip`, await measure(name, scenarios.page, 1));
    loadAverages.push(load1());
    // The peaks compared are of the same work: the floors never compress, so the facade's is
    // read before its compressed rows (zlib's buffers are memory of their own).
    const rss = {
      facadePeakRssMb: peakRssMb(facade.pid as number),
      floorPeakRssMb: peakRssMb(floor.pid as number),
      yogaPeakRssMb: peakRssMb(yoga.pid as number),
      basePeakRssMb: Object.fromEntries(
        bases.map((base) => [base.name, peakRssMb(servers[base.name]?.pid as number)]),
      ),
    };
    // The page again, compressed: what the bytes saved cost the facade in CPU.
    for (const encoding of ['gzip', 'br']) {
      add(
        `facade page-${encoding}`,
        await load(facade.pid as number, graphqlUrl, scenarios.page, CONNECTIONS, {
          'accept-encoding': encoding,
        }),
      );
    }

    const s = Object.fromEntries(Object.entries(runs).map(([key, m]) => [key, summary(m)]));
    const direct = s.direct as ReturnType<typeof summary>;
    const ratio = (a: number, b: number | undefined) => Number((a / (b ?? Number.NaN)).toFixed(3));
    const rows = Object.entries(s).map(([key, one]) => {
      const [server, scenario] = key.split(' ') as [string, string, string?];
      const roundTrip = key.endsWith('round trip');
      const floorKey = roundTrip ? 'floor round trip' : `floor ${scenario?.split('-')[0]}`;
      const yogaKey = roundTrip ? 'yoga round trip' : `yoga ${scenario?.split('-')[0]}`;
      const directKey = roundTrip ? 'direct round trip' : 'direct';
      return {
        server,
        scenario: roundTrip
          ? 'round trip (1 connection)'
          : server === 'direct'
            ? 'GET page'
            : scenario,
        rps: one.rps,
        ofFloor: server === 'direct' ? null : ratio(one.rps, s[floorKey]?.rps),
        ofYoga: facades.includes(server) ? ratio(one.rps, s[yogaKey]?.rps) : null,
        ofDirect: ratio(one.rps, s[directKey]?.rps),
        meanMs: one.mean,
        meanOfFloor: roundTrip && server !== 'direct' ? ratio(one.mean, s[floorKey]?.mean) : null,
        p50Ms: one.p50,
        p99Ms: one.p99,
        errors: one.errors,
        callsPerOp:
          server === 'direct' ? 1 : (calls[server]?.[(scenario ?? 'page') as Scenario] ?? 1),
        cpuUsPerReq: one.cpuUsPerRequest,
        cpuOfFloor:
          server === 'direct' ? null : ratio(one.cpuUsPerRequest, s[floorKey]?.cpuUsPerRequest),
        bytesPerResponse: one.bytesPerResponse,
      };
    });
    const facadePeakWithCompressionMb = peakRssMb(facade.pid as number);
    console.table(rows);
    console.log(
      `peak RSS before the compressed rows: facade ${rss.facadePeakRssMb} MB, floor ${rss.floorPeakRssMb} MB ` +
        `(${ratio(rss.facadePeakRssMb, rss.floorPeakRssMb)}x), floor on Yoga ${rss.yogaPeakRssMb} MB; ` +
        `the facade's after them ${facadePeakWithCompressionMb} MB` +
        bases
          .map(
            (base) =>
              `; ${base.name} ${rss.basePeakRssMb[base.name]} MB (${ratio(rss.basePeakRssMb[base.name] ?? 0, rss.floorPeakRssMb)}x)`,
          )
          .join(''),
    );

    for (const server of Object.values(servers))
      children.find((child) => child.pid === server.pid)?.kill('SIGTERM');
    const curves = await warmUpCurves(sandboxUrl, children);
    loadAverages.push(load1());
    const cache = await caching();
    loadAverages.push(load1());
    console.log(`load average (1 min) during the run: ${loadAverages.join(', ')}`);
    console.log(`servers on node ${serverNodeVersion} ${serverNodeFlags.join(' ')}`);
    const results = {
      date: new Date().toISOString(),
      node: serverNodeVersion,
      nodeFlags: serverNodeFlags,
      connections: CONNECTIONS,
      durationS: DURATION_S,
      rounds: ROUNDS,
      workers: WORKERS,
      loadAverages,
      ...rss,
      facadePeakWithCompressionMb,
      rows,
      warmUp: curves,
      cache,
    };
    writeFileSync(
      new URL('./results.json', import.meta.url),
      `${JSON.stringify(results, null, 2)}\n`,
    );
    if (direct.rps < 20_000)
      console.warn(
        `warning: direct baseline ${direct.rps} req/s is under 20,000 (autocannon shares the sandbox's core); ` +
          `the sandbox alone serves ${Math.round(1e6 / direct.cpuUsPerRequest)} per CPU-second`,
      );
  } finally {
    for (const child of children) child.kill('SIGTERM');
  }
}

/**
 * A fresh facade, then a fresh floor, each loaded from the moment it is ready: the cost of its
 * first seconds against its steady state. The floor's curve shows what of that is the machine's
 * (a cold load generator and sandbox, a young heap) rather than the facade's.
 */
async function warmUpCurves(sandboxUrl: string, children: ChildProcess[]) {
  // Long enough for the last third to be the steady state: V8 settles after about 25 s of load.
  const seconds = Number(process.env.BENCH_WARMUP_CURVE_S ?? 36);
  const curves: Record<string, Awaited<ReturnType<typeof warmUpCurve>>> = {};
  for (const name of ['facade', 'floor'] as const) {
    const port = await freePort();
    const fresh =
      name === 'facade'
        ? await startFacade(port, sandboxUrl, {}, WORKERS)
        : await startFloor(port, sandboxUrl);
    children.push(fresh);
    const curve = await warmUpCurve(
      fresh.pid as number,
      `http://127.0.0.1:${port}/graphql`,
      scenarios.page,
      seconds,
    );
    fresh.kill('SIGTERM');
    curves[name] = curve;
    console.log(
      `warm-up, ${name}: CPU µs per page request by second since ready: ${curve.cpuUsPerRequestBySecond.join(', ')}; ` +
        `first 2 s ${curve.first2sUs} µs = ${curve.first2sToSteady}x the steady ${curve.steadyUs} µs`,
    );
  }
  return curves;
}

await main();
