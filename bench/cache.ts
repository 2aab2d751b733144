// The caching part of `npm run bench` (alone: `npm run bench -- --cache`). A sandbox of its own
// sends `Cache-Control: max-age=30` with every repository page, and on core 0, loaded one at a
// time: the facade with its response cache off (RESPONSE_CACHE=false) and on (the default), the
// floor, and the floor on Yoga with Yoga's own response cache (FLOOR_CACHE=1: per Authorization,
// 30 s, the nearest stand-in for GraphQL Mesh with its cache on). Then two scenarios of its own,
// on the facade with nothing shared across requests, with joining of in-flight calls only, and
// with the response cache and joining (the defaults):
//
// - callers: 50 callers with their own tokens ask for the first ten pages, the page's offset
//   Zipf-distributed (page k with weight 1 / k), each request from one of them at random;
// - identical: 32 connections of one caller send the same page request.
//
// Upstream calls are counted by the sandbox over each measured run; for the cached facade the
// sandbox's log also shows how many calls each distinct upstream page had during its load (its
// re-warming and its measured run, shorter than the 30 s lifetime): at most one is the target.
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { freePort } from '../test/helpers/net.js';
import { bases, cpuSeconds, startFacade, startFloor, startSandbox } from './processes.js';

const DURATION_S = Number(process.env.BENCH_CACHE_DURATION_S ?? 4);
/** Seconds of the page per server before anything is measured. */
const WARM_S = Number(process.env.BENCH_CACHE_WARM_S ?? 20);
/** Seconds of the same load right before each measured run (not counted). */
const REWARM_S = 2;
const CALLERS = 50;
const PAGES = 10;
/** The sandbox's lifetime for a page, the floor on Yoga's TTL. */
const MAX_AGE_S = 30;

interface Row {
  rps: number;
  p99: number;
  /** Upstream calls per 1,000 requests over the measured run. */
  callsPer1000: number;
  cpuUsPerReq: number;
  errors: number;
  /**
   * For the servers that cache: the most calls one distinct upstream page had during the load
   * (re-warming and run), and how many pages were called.
   */
  maxCallsPerPage: number | null;
  distinctPages: number | null;
}

type Load = Pick<autocannon.Options, 'connections' | 'requests' | 'headers' | 'body'>;

export interface CacheOptions {
  connections: number;
  /** The main run's documents, by name: the page, five aliases, three adjacent pages. */
  workloads: Record<string, string>;
  /** The page's selection, for the callers' pages. */
  pageFields: string;
  /** Started processes, stopped by the caller whatever happens. */
  children: ChildProcess[];
}

/** A PRNG with a fixed seed (mulberry32), so that every run asks for the same sequence. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Page k (from 0) with weight 1 / (k + 1): the cumulative weights, to search. */
function zipf(pages: number): number[] {
  const weights = Array.from({ length: pages }, (_, k) => 1 / (k + 1));
  const total = weights.reduce((sum, w) => sum + w, 0);
  let sum = 0;
  return weights.map((w) => {
    sum += w / total;
    return sum;
  });
}

function callersLoad(pageFields: string): Load {
  const next = random(28);
  const cumulative = zipf(PAGES);
  const bodies = cumulative.map((_, page) =>
    JSON.stringify({
      query: `query Page($offset: Int) { repositories(limit: 20, offset: $offset) { ${pageFields} } }`,
      variables: { offset: page * 20 },
    }),
  );
  const tokens = Array.from({ length: CALLERS }, (_, i) => `Bearer bench-caller-${i}`);
  return {
    connections: CALLERS,
    requests: [
      {
        method: 'POST',
        setupRequest: (request) => {
          const u = next();
          const page = cumulative.findIndex((c) => u < c);
          return {
            ...request,
            headers: {
              ...request.headers,
              authorization: tokens[Math.floor(next() * CALLERS)] as string,
            },
            body: bodies[page < 0 ? PAGES - 1 : page] as string,
          };
        },
      },
    ],
  };
}

export async function cacheComparison({
  connections,
  workloads,
  pageFields,
  children,
}: CacheOptions) {
  const sandboxPort = await freePort();
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const sandbox = await startSandbox(sandboxPort, {
    SANDBOX_REPOSITORIES: '1000',
    SANDBOX_CACHE_CONTROL: `max-age=${MAX_AGE_S}`,
  });
  children.push(sandbox);

  const kinds: Record<string, (port: number) => Promise<ChildProcess>> = {
    floor: (port: number) => startFloor(port, sandboxUrl),
    'yoga+cache': (port: number) => startFloor(port, sandboxUrl, 'yoga', {}, { FLOOR_CACHE: '1' }),
    'facade, nothing shared': (port: number) =>
      startFacade(port, sandboxUrl, { RESPONSE_CACHE: 'false', JOIN_UPSTREAM_CALLS: 'false' }),
    'facade, cache off': (port: number) =>
      startFacade(port, sandboxUrl, { RESPONSE_CACHE: 'false' }),
    'facade, cache on': (port: number) => startFacade(port, sandboxUrl),
  };
  // BENCH_BASE's facades, with their defaults, beside this one's.
  const baseKinds = bases.map((base) => `${base.name}, cache on`);
  for (const [i, base] of bases.entries())
    kinds[baseKinds[i] as string] = (port) => startFacade(port, sandboxUrl, {}, 1, base.script);
  type Kind = string;
  const servers: Record<Kind, { pid: number; url: string }> = {};
  for (const [kind, startKind] of Object.entries(kinds)) {
    const port = await freePort();
    const child = await startKind(port);
    children.push(child);
    servers[kind] = { pid: child.pid as number, url: `http://127.0.0.1:${port}/graphql` };
  }

  const post = (kind: Kind, load: Load, seconds: number) =>
    autocannon({
      url: servers[kind]?.url as string,
      method: 'POST',
      duration: seconds,
      ...load,
      headers: { 'content-type': 'application/json', ...load.headers },
    });
  const calls = async () => {
    const response = await fetch(`${sandboxUrl}/__sandbox/counts`);
    const { counts } = (await response.json()) as { counts: Record<string, number> };
    return counts['GET /git/v1/repo'] ?? 0;
  };
  const clearCalls = () => fetch(`${sandboxUrl}/__sandbox/requests`, { method: 'DELETE' });
  /** The most calls one distinct upstream page (caller, offset and limit) had since the clear. */
  const perPage = async () => {
    const response = await fetch(`${sandboxUrl}/__sandbox/requests`);
    const { requests } = (await response.json()) as {
      requests: { path: string; query: Record<string, string>; headers: Record<string, string> }[];
    };
    const pages = new Map<string, number>();
    for (const one of requests) {
      if (one.path !== '/git/v1/repo') continue;
      const key = `${one.headers.authorization ?? ''} ${one.query.offset ?? 0} ${one.query.limit}`;
      pages.set(key, (pages.get(key) ?? 0) + 1);
    }
    return { max: Math.max(0, ...pages.values()), distinct: pages.size };
  };

  const cached = new Set<Kind>(['yoga+cache', 'facade, cache on', ...baseKinds]);
  const measure = async (kind: Kind, load: Load): Promise<Row> => {
    await clearCalls();
    await post(kind, load, REWARM_S);
    const before = await calls();
    const pid = servers[kind]?.pid as number;
    const cpuBefore = cpuSeconds(pid);
    const result = await post(kind, load, DURATION_S);
    const cpuS = cpuSeconds(pid) - cpuBefore;
    const measuredCalls = (await calls()) - before;
    const pages = cached.has(kind) ? await perPage() : { max: null, distinct: null };
    return {
      rps: Math.round(result.requests.average),
      p99: result.latency.p99,
      callsPer1000: Number(((1000 * measuredCalls) / result.requests.total).toFixed(2)),
      cpuUsPerReq: Math.round((1e6 * cpuS) / result.requests.total),
      errors: result.errors + result.timeouts + result.non2xx,
      maxCallsPerPage: pages.max,
      distinctPages: pages.distinct,
    };
  };

  const compared: Kind[] = [
    'floor',
    'yoga+cache',
    'facade, cache off',
    'facade, cache on',
    ...baseKinds,
  ];
  const page = { connections, body: workloads.page };
  for (const kind of compared) await post(kind, page, WARM_S);
  const rows: ({ workload: string; server: string } & Row)[] = [];
  for (const [workload, body] of Object.entries(workloads)) {
    for (const kind of compared)
      rows.push({ workload, server: kind, ...(await measure(kind, { connections, body })) });
  }

  const scenarioLoads: Record<string, Load> = {
    'callers (50, Zipf)': callersLoad(pageFields),
    'identical (32, one caller)': {
      connections: 32,
      body: workloads.page,
      headers: { authorization: 'Bearer bench-one-caller' },
    },
  };
  const variants: Kind[] = ['facade, nothing shared', 'facade, cache off', 'facade, cache on'];
  await post('facade, nothing shared', page, WARM_S);
  const scenarioRows: ({ scenario: string; server: string } & Row)[] = [];
  for (const [scenario, load] of Object.entries(scenarioLoads)) {
    for (const kind of variants)
      scenarioRows.push({ scenario, server: kind, ...(await measure(kind, load)) });
  }

  const find = (workload: string, server: Kind) =>
    rows.find((row) => row.workload === workload && row.server === server) as Row;
  const ratios = Object.keys(workloads).map((workload) => {
    const on = find(workload, 'facade, cache on');
    const ratio = (other: Row) => Number((on.rps / other.rps).toFixed(2));
    return {
      workload,
      'cache on ÷ floor': ratio(find(workload, 'floor')),
      'cache on ÷ yoga+cache': ratio(find(workload, 'yoga+cache')),
      'cache on ÷ cache off': ratio(find(workload, 'facade, cache off')),
      ...Object.fromEntries(
        baseKinds.map((kind) => [
          `${kind} ÷ floor`,
          Number((find(workload, kind).rps / find(workload, 'floor').rps).toFixed(2)),
        ]),
      ),
    };
  });
  console.log(`the upstream sending Cache-Control: max-age=${MAX_AGE_S}, ${DURATION_S} s a run:`);
  console.table(rows);
  console.table(ratios);
  console.table(scenarioRows);
  for (const server of Object.values(servers)) {
    const child = children.find((one) => one.pid === server.pid);
    child?.kill('SIGTERM');
  }
  sandbox.kill('SIGTERM');
  return { durationS: DURATION_S, maxAgeS: MAX_AGE_S, rows, ratios, scenarios: scenarioRows };
}
