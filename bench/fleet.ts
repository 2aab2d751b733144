// `npm run bench -- --fleet`: replicas of the compiled facade on one Redis behind HAProxy
// (test/helpers/fleet.ts, the harness the fleet's end-to-end test uses), under steady reads from
// CALLERS callers over PAGES pages, every process on both cores (Redis, its sentinels and HAProxy
// starved on the load's core made a failover a measure of the machine):
//
// - calls: the upstream sending `max-age=2` (then with `stale-while-revalidate=30`); upstream calls
//   per caller's page per max-age, one replica against three, and three without Redis.
// - outage: the upstream sending `max-age=2, stale-if-error=600`; once every caller's pages are
//   kept, it answers 503 for 10 s. A replica stopped before the outage starts during it. Reported:
//   answers with data through the balancer, and on that replica alone once it is up.
// - rolling restart: every replica restarted in turn as a rolling update does (out of the
//   balancer, SIGTERM, a new process, in again once HAProxy sees it up).
// - Redis failover: the replicas on a master, a replica and three sentinels, the master killed;
//   then on a Cluster of three masters with a replica each, one master killed.
import { execFileSync } from 'node:child_process';
import {
  type Answer,
  type Fleet,
  type FleetOptions,
  failures,
  quantile,
  startFleet,
  startLoad,
} from '../test/helpers/fleet.js';
import { startRedisCluster, startRedisSentinel } from '../test/helpers/redis.js';
import { FACADE_SCRIPT, serverNode, serverNodeFlags } from './processes.js';

const CONCURRENCY = 16;
const CALLERS = 8;
const PAGES = 5;
const MAX_AGE_S = 2;
const CALLS_S = Number(process.env.BENCH_FLEET_CALLS_S ?? 8);
const OUTAGE_S = 10;
const PAGE_ROUTE = 'GET /git/v1/repo';

const PAGE_QUERIES = Array.from(
  { length: PAGES },
  (_, page) =>
    `{ repositories(limit: 20, offset: ${page * 20}) { total hasNextPage items { id defaultBranch } } }`,
);
const loadOptions = { concurrency: CONCURRENCY, callers: CALLERS, queries: PAGE_QUERIES };
// One caller's pages are its own (credentials never share an entry): CALLERS × PAGES pages, and
// CALLERS and PAGES prime to each other so that the round robin of the load meets each pair.
const CALLER_PAGES = CALLERS * PAGES;

export interface FleetRow {
  scenario: string;
  replicas: number;
  requests: number;
  failed: number;
  /** Answers with data, of all answers, in %. */
  withData: number;
  p99Ms: number;
  maxMs: number;
  over1s: number;
  /** Upstream calls per caller's page per max-age. */
  callsPerPagePerMaxAge?: number;
  /**
   * The same against one replica's: what the fleet adds. One process already calls more than once
   * a max-age: an answer's age counts from its `Date`, which is whole seconds.
   */
  ofOneReplica?: number;
}

/** The compiled facade and the compiled sandbox, as `npm run bench` runs them. */
const compiled = (options: FleetOptions): FleetOptions => ({
  facade: [serverNode, ...serverNodeFlags, FACADE_SCRIPT],
  sandbox: [serverNode, 'bench/build/sandbox/main.js'],
  ...options,
  sandboxEnv: { SANDBOX_REPOSITORIES: '1000', ...options.sandboxEnv },
  env: { UPSTREAM_RETRIES: '0', SHUTDOWN_GRACE_MS: '10000', ...options.env },
});

/** The commonest reasons of a run's failures, one line each, for the run's log. */
function reportFailures(scenario: string, reasons: readonly string[]): void {
  const counts = new Map<string, number>();
  for (const reason of reasons) {
    const key = reason.slice(0, 160);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 3);
  for (const [reason, count] of top) console.log(`${scenario}: ${count} × ${reason}`);
}

function row(scenario: string, replicas: number, answers: readonly Answer[]): FleetRow {
  const reasons = failures(answers);
  reportFailures(scenario, reasons);
  const failed = reasons.length;
  return {
    scenario,
    replicas,
    requests: answers.length,
    failed,
    withData: Number(((100 * (answers.length - failed)) / Math.max(1, answers.length)).toFixed(1)),
    p99Ms: quantile(answers, 0.99),
    maxMs: quantile(answers, 1),
    over1s: answers.filter((answer) => answer.ms > 1_000).length,
  };
}

async function withFleet<T>(options: FleetOptions, run: (fleet: Fleet) => Promise<T>): Promise<T> {
  const fleet = await startFleet(compiled(options));
  try {
    return await run(fleet);
  } finally {
    await fleet.stop();
  }
}

const loadFor = (url: string, seconds: number) =>
  startLoad(url, { ...loadOptions, maxMs: seconds * 1000 }).finished;

const pageCalls = async (fleet: Fleet) => (await fleet.upstreamCounts())[PAGE_ROUTE] ?? 0;

async function callsPerPage(
  label: string,
  cacheControl: string,
  replicas: number,
  redis: boolean,
): Promise<FleetRow> {
  const options = {
    replicas,
    sandboxEnv: { SANDBOX_CACHE_CONTROL: cacheControl },
    ...(redis ? {} : { redisUrl: null }),
  };
  return withFleet(options, async (fleet) => {
    // Every caller's pages fetched once before the count starts.
    await loadFor(fleet.url, 1);
    const before = await pageCalls(fleet);
    const answers = await loadFor(fleet.url, CALLS_S);
    const calls = (await pageCalls(fleet)) - before;
    return {
      ...row(`calls, ${label}`, replicas, answers),
      callsPerPagePerMaxAge: Number((calls / CALLER_PAGES / (CALLS_S / MAX_AGE_S)).toFixed(2)),
    };
  });
}

async function outage(): Promise<FleetRow[]> {
  const sandboxEnv = { SANDBOX_CACHE_CONTROL: `max-age=${MAX_AGE_S}, stale-if-error=600` };
  return withFleet({ sandboxEnv }, async (fleet) => {
    await loadFor(fleet.url, 3);
    const fresh = fleet.replicas[2];
    if (!fresh) throw new Error('the outage needs three replicas');
    let through: Promise<Answer[]> = Promise.resolve([]);
    let ends = 0;
    // The replica goes before the outage and starts during it, as the autoscaler would start one.
    await fleet.restart(fresh, {
      whileDown: async () => {
        await fleet.fault(PAGE_ROUTE, { status: 503, body: { message: 'maintenance' } });
        ends = Date.now() + OUTAGE_S * 1000;
        through = loadFor(fleet.url, OUTAGE_S);
      },
    });
    const onFresh = await loadFor(fresh.url, Math.max(1, (ends - Date.now()) / 1000));
    const all = await through;
    await fleet.fault(undefined);
    return [
      row('outage (503 for 10 s), through the balancer', 3, all),
      row('outage, on the replica started during it', 1, onFresh),
    ];
  });
}

async function rollingRestart(): Promise<FleetRow> {
  return withFleet({}, async (fleet) => {
    await loadFor(fleet.url, 2);
    const load = startLoad(fleet.url, { ...loadOptions, maxMs: 300_000 });
    await fleet.rollingRestart();
    return row('rolling restart of every replica', 3, await load.stop());
  });
}

/** A Redis of the fleet's own, and how it loses its master. */
interface FailingRedis {
  url: string;
  killMaster(): Promise<unknown>;
  stop(): Promise<void>;
}

async function redisFailover(scenario: string, redis: FailingRedis): Promise<FleetRow> {
  try {
    return await withFleet({ redisUrl: redis.url }, async (fleet) => {
      await loadFor(fleet.url, 2);
      const load = startLoad(fleet.url, { ...loadOptions, maxMs: 300_000 });
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      await redis.killMaster();
      // The fleet on the promoted replica for a while before the load ends.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      return row(scenario, 3, await load.stop());
    });
  } finally {
    await redis.stop();
  }
}

export async function fleetScenarios(): Promise<FleetRow[]> {
  // `npm run bench` pins itself to core 1; every process the fleet starts inherits what this has.
  execFileSync('taskset', ['-a', '-p', '-c', '0,1', String(process.pid)], { stdio: 'ignore' });
  const rows: FleetRow[] = [];
  const push = (...measured: FleetRow[]) => {
    for (const one of measured) console.log(JSON.stringify(one));
    rows.push(...measured);
  };
  for (const [label, cacheControl] of [
    [`max-age=${MAX_AGE_S}`, `max-age=${MAX_AGE_S}`],
    [`max-age=${MAX_AGE_S}, swr`, `max-age=${MAX_AGE_S}, stale-while-revalidate=30`],
  ] as const) {
    const one = await callsPerPage(label, cacheControl, 1, true);
    const ofOne = (measured: FleetRow): FleetRow => ({
      ...measured,
      ofOneReplica: Number(
        ((measured.callsPerPagePerMaxAge ?? 0) / (one.callsPerPagePerMaxAge ?? 0)).toFixed(2),
      ),
    });
    push(ofOne(one));
    push(ofOne(await callsPerPage(label, cacheControl, 3, true)));
    push(ofOne(await callsPerPage(`${label}, no Redis`, cacheControl, 3, false)));
  }
  push(...(await outage()));
  push(await rollingRestart());
  push(
    await redisFailover(
      'Redis Sentinel failover (master killed)',
      await startRedisSentinel({ sentinels: 3 }),
    ),
  );
  push(
    await redisFailover(
      'Redis Cluster failover (a master killed)',
      await startRedisCluster({ replicas: 1 }),
    ),
  );
  console.log(
    `\nFleet: HAProxy in front of replicas on one Redis; ${CONCURRENCY} concurrent reads from ${CALLERS} callers over ${PAGES} pages`,
  );
  console.table(rows);
  return rows;
}
