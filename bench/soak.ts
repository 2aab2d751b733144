// `npm run soak`: mixed operations at a fixed rate against the facade and the sandbox, each a
// separate process as `npm run bench` starts them, while the sandbox's fault injection switches
// upstream failures on and off in phases. Loopback only (the facade, the sandbox and the DNS server
// they both ask listen on 127.0.0.1). Exits non-zero if a request was lost or the facade's RSS grew
// without bound. Never run by `npm test`.
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { ERROR_CODES } from '../src/errors.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { freePort } from '../test/helpers/net.js';
import { build, peakRssMb, rssMb, startFacade, startSandbox } from './processes.js';

function positive(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!(value > 0)) {
    process.stderr.write(`${name} must be a positive number, got "${process.env[name]}"\n`);
    process.exit(2);
  }
  return value;
}
const DURATION_S = positive('SOAK_DURATION_S', 60);
const RATE = positive('SOAK_RATE', 50);
const UPSTREAM_TIMEOUT_MS = 1_000;
/** Far above anything the facade may take under these settings: past it, a request counts as lost. */
const CLIENT_TIMEOUT_MS = 15_000;
/** RSS judged unbounded: the end above this multiple of the RSS after warm-up, and still rising. */
const RSS_GROWTH_LIMIT = 1.5;

const CONTRACT_CODES = new Set<string>([
  ...ERROR_CODES,
  'UPSTREAM_BUDGET_EXCEEDED',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_ONLY',
]);

/** Faults, as the sandbox's control route takes them, applied to every upstream route at once. */
const PHASES = [
  { name: 'warm-up', share: 2 },
  { name: '5xx', share: 2, fault: { status: 503 } },
  { name: 'healthy', share: 1 },
  { name: 'slow', share: 2, fault: { delayMs: 2 * UPSTREAM_TIMEOUT_MS } },
  { name: 'healthy again', share: 1 },
  { name: 'resets', share: 2, fault: { reset: true } },
  { name: 'recovered', share: 2 },
] as const;
type PhaseName = (typeof PHASES)[number]['name'];
const FAULT_ROUTES = [
  'GET/git/v1/repo',
  'POST/domains/v1/verifications',
  'PUT/domains/v1/verifications',
  'POST/ephemeral/v1/dev-servers',
];

interface Operation {
  name: string;
  weight: number;
  query: string;
  variables: (n: number) => Record<string, unknown>;
  /** The facade must refuse it without an upstream call. */
  invalid?: true;
}
const PAGE = `query($limit: Int, $offset: Int) { repositories(limit: $limit, offset: $offset) {
  total hasNextPage items { id defaultBranch branches { name } tags { name } } } }`;
const domain = (n: number) => `soak-${n % 100}.example.com`;
const CREATE = `mutation($domain: String!) { createDomainVerification(input: { domain: $domain }) {
  id verificationCode dnsRecord { name value } } }`;
const DEV_SERVER = `mutation($input: RequestDevServerInput!) { requestDevServer(input: $input) {
  ephemeralUrl isNew devCommandRunning } }`;
const OPERATIONS: Operation[] = [
  {
    name: 'page',
    weight: 6,
    query: PAGE,
    variables: (n) => ({ limit: 1 + (n % 20), offset: n % 60 }),
  },
  {
    name: 'connection',
    weight: 3,
    query: `query($first: Int) { repositoriesConnection(first: $first) {
      totalCount edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }`,
    variables: (n) => ({ first: 1 + (n % 10) }),
  },
  {
    name: 'createDomainVerification',
    weight: 2,
    query: CREATE,
    variables: (n) => ({ domain: domain(n) }),
  },
  {
    name: 'verifyDomain',
    weight: 2,
    query:
      'mutation($domain: String!) { verifyDomain(input: { domain: $domain }) { verified message } }',
    variables: (n) => ({ domain: domain(n) }),
  },
  {
    name: 'domainDnsCheck',
    weight: 1,
    query: 'query($domain: String!) { domainDnsCheck(domain: $domain) { host values error } }',
    variables: (n) => ({ domain: domain(n) }),
  },
  {
    name: 'requestDevServer',
    weight: 2,
    query: DEV_SERVER,
    variables: (n) => ({
      input: {
        repoId: `repo-${n % 10}`,
        devCommand: 'npm run dev',
        envVars: [{ name: 'NODE_ENV', value: 'development' }],
        ports: [{ port: 443, targetPort: 3000 }],
      },
    }),
  },
  {
    name: 'invalid: limit -1',
    weight: 1,
    invalid: true,
    query: PAGE,
    variables: () => ({ limit: -1 }),
  },
  {
    name: 'invalid: limit 1000',
    weight: 1,
    invalid: true,
    query: PAGE,
    variables: () => ({ limit: 1000 }),
  },
  {
    name: 'invalid: domain a.com/x',
    weight: 1,
    invalid: true,
    query: CREATE,
    variables: () => ({ domain: 'victim.com/attacker.com' }),
  },
  {
    name: 'invalid: port 80',
    weight: 1,
    invalid: true,
    query: DEV_SERVER,
    variables: () => ({ input: { ports: [{ port: 80, targetPort: 3000 }] } }),
  },
];
const SCHEDULE = OPERATIONS.flatMap((op) => Array.from({ length: op.weight }, () => op));

interface Outcome {
  id: string;
  op: Operation;
  phase: PhaseName;
  status?: number;
  /** The answer's distinct codes, `ok` for an answer without errors. */
  labels: string[];
  lost?: string;
}

/** Counts of labels per row, printed as one table. */
class Tally {
  readonly rows = new Map<string, Map<string, number>>();
  add(row: string, label: string, by = 1) {
    const counts = this.rows.get(row) ?? new Map<string, number>();
    counts.set(label, (counts.get(label) ?? 0) + by);
    this.rows.set(row, counts);
  }
  print(title: string) {
    console.log(`\n${title}`);
    console.table(
      Object.fromEntries([...this.rows].map(([row, counts]) => [row, Object.fromEntries(counts)])),
    );
  }
}

/** Samples of one Prometheus metric family from a /metrics text: labels and value. */
function samples(text: string, metric: string): Array<{ labels: string; value: number }> {
  const pattern = new RegExp(`^${metric}(\\{[^}]*\\})?\\s+(\\S+)$`, 'gm');
  return [...text.matchAll(pattern)].map((m) => ({ labels: m[1] ?? '', value: Number(m[2]) }));
}

async function main() {
  build();
  const dns = await startDnsServer();
  const [sandboxPort, facadePort] = [await freePort(), await freePort()];
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const facadeUrl = `http://127.0.0.1:${facadePort}`;
  const children: ChildProcess[] = [];
  const stopChildren = () => {
    for (const child of children) child.kill('SIGTERM');
  };
  process.once('SIGINT', () => {
    stopChildren();
    process.exit(130);
  });
  try {
    const dnsEnv = { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '500' };
    children.push(await startSandbox(sandboxPort, { SANDBOX_FAULTS: 'true', ...dnsEnv }));
    const facade = await startFacade(facadePort, sandboxUrl, {
      UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      DEV_SERVER_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      // One client at a steady rate: the limiter has tests of its own and would only add 429s.
      RATE_LIMIT_POINTS: '0',
      // One process: the breaker's state is per worker, and the soak reads one.
      WORKERS: '1',
      ...dnsEnv,
    });
    children.push(facade);
    const pid = facade.pid as number;
    await report(await soak(pid, sandboxUrl, facadeUrl), pid);
  } finally {
    stopChildren();
    await dns.close();
  }
}

interface Run {
  outcomes: Outcome[];
  /** Upstream requests per soak request id, from the sandbox's log. */
  calls: Map<string, number>;
  rss: Array<{ atS: number; phase: PhaseName | 'start' | 'end'; mb: number }>;
  warmRss: number;
  breaker: { help?: string; changes: string[]; transitions?: string; reported: boolean };
  attempts: Tally;
}

async function soak(pid: number, sandboxUrl: string, facadeUrl: string): Promise<Run> {
  const run: Run = {
    outcomes: [],
    calls: new Map(),
    rss: [{ atS: 0, phase: 'start', mb: rssMb(pid) }],
    warmRss: 0,
    breaker: { changes: [], reported: false },
    attempts: new Tally(),
  };
  const t0 = performance.now();
  const atS = () => Math.round((performance.now() - t0) / 100) / 10;
  let phase: PhaseName = PHASES[0].name;

  // The sandbox keeps its last 10,000 requests; read often enough, the highest count seen for a
  // request id is all of its calls, and nothing needs clearing while requests are in flight.
  const readCalls = async () => {
    const log = (await (await fetch(`${sandboxUrl}/__sandbox/requests`)).json()) as {
      requests: Array<{ headers: Record<string, string> }>;
    };
    const seen = new Map<string, number>();
    for (const request of log.requests) {
      const id = request.headers['x-request-id'];
      if (id?.startsWith('soak-')) seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    for (const [id, count] of seen) run.calls.set(id, Math.max(run.calls.get(id) ?? 0, count));
  };
  let lastBreaker: string | undefined;
  const readMetrics = async () => {
    const text = await (await fetch(`${facadeUrl}/metrics`)).text();
    const state = samples(text, 'upstream_breaker_state');
    if (state.length === 0) return text;
    run.breaker.reported = true;
    run.breaker.help ??= /^# HELP upstream_breaker_state (.*)$/m.exec(text)?.[1];
    const now = state.map((s) => `${s.labels}${s.value}`).join(' ');
    if (now !== lastBreaker) run.breaker.changes.push(`${atS()} s (${phase}): ${now}`);
    lastBreaker = now;
    return text;
  };
  const every = (ms: number, task: () => Promise<unknown>) => {
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      task()
        .catch((error: unknown) => console.error(`soak: ${String(error)}`))
        .finally(() => {
          busy = false;
        });
    }, ms);
    return () => clearInterval(timer);
  };
  const stopSampling = every(1_000, async () => {
    run.rss.push({ atS: atS(), phase, mb: rssMb(pid) });
    await readMetrics();
  });
  const stopReading = every(3_000, readCalls);

  const send = async (n: number, op: Operation): Promise<Outcome> => {
    const outcome: Outcome = { id: `soak-${n}`, op, phase, labels: [] };
    try {
      const response = await fetch(`${facadeUrl}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json, application/json',
          authorization: `Bearer soak-account-${n % 4}`,
          'x-request-id': outcome.id,
        },
        body: JSON.stringify({ query: op.query, variables: op.variables(n) }),
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      });
      outcome.status = response.status;
      const text = await response.text();
      let body: { errors?: Array<{ extensions?: { code?: unknown } }> } | undefined;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const codes = (body?.errors ?? []).map((e) => String(e.extensions?.code));
      outcome.labels =
        body === undefined ? ['(not JSON)'] : codes.length ? [...new Set(codes)] : ['ok'];
      const coded = codes.some((code) => CONTRACT_CODES.has(code));
      if (response.status >= 500 && !coded) outcome.lost = `HTTP ${response.status} without a code`;
    } catch (error) {
      const name = error instanceof Error ? error.name : '';
      outcome.lost = name === 'TimeoutError' ? 'client-side timeout' : `connection error (${name})`;
    }
    return outcome;
  };

  const interval = 1_000 / RATE;
  const shares = PHASES.reduce((sum, p) => sum + p.share, 0);
  const inFlight: Array<Promise<Outcome>> = [];
  let n = 0;
  let phaseEndMs = 0;
  for (const current of PHASES) {
    phase = current.name;
    await fetch(`${sandboxUrl}/__sandbox/faults`, { method: 'DELETE' });
    if ('fault' in current)
      for (const route of FAULT_ROUTES) {
        const put = await fetch(`${sandboxUrl}/__sandbox/faults/${route}`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(current.fault),
        });
        if (!put.ok) throw new Error(`sandbox refused the fault on ${route}: ${await put.text()}`);
      }
    phaseEndMs += (DURATION_S * 1_000 * current.share) / shares;
    for (;;) {
      const due = n * interval;
      if (due >= phaseEndMs) break;
      const wait = due - (performance.now() - t0);
      if (wait > 0) await sleep(wait);
      inFlight.push(send(n, SCHEDULE[n % SCHEDULE.length] as Operation));
      n++;
    }
    run.rss.push({ atS: atS(), phase, mb: rssMb(pid) });
    if (phase === 'warm-up') run.warmRss = rssMb(pid);
    await readCalls();
  }
  await fetch(`${sandboxUrl}/__sandbox/faults`, { method: 'DELETE' });
  run.outcomes = await Promise.all(inFlight);
  stopSampling();
  stopReading();
  await readCalls();
  const metrics = await readMetrics();
  run.rss.push({ atS: atS(), phase: 'end', mb: rssMb(pid) });
  for (const s of samples(metrics, 'upstream_breaker_transitions_total'))
    run.breaker.transitions = `${run.breaker.transitions ?? ''}${s.labels} ${s.value}  `;
  for (const s of samples(metrics, 'upstream_calls_total')) {
    const route = /route="([^"]*)"/.exec(s.labels)?.[1] ?? '?';
    run.attempts.add(route, /status="([^"]*)"/.exec(s.labels)?.[1] ?? '?', s.value);
  }
  return run;
}

/** Least-squares slope of RSS over time, MB per second. */
function slope(points: Array<{ atS: number; mb: number }>): number {
  const mean = (f: (p: { atS: number; mb: number }) => number) =>
    points.reduce((sum, p) => sum + f(p), 0) / points.length;
  const [mt, mm] = [mean((p) => p.atS), mean((p) => p.mb)];
  const cov = mean((p) => (p.atS - mt) * (p.mb - mm));
  const variance = mean((p) => (p.atS - mt) ** 2);
  return variance === 0 ? 0 : cov / variance;
}

async function report(run: Run, pid: number) {
  const { outcomes } = run;
  console.log(
    `\nsoak: ${DURATION_S} s at ${RATE} operations/s, ${outcomes.length} sent; upstream timeout ${UPSTREAM_TIMEOUT_MS} ms; phases: ${PHASES.map((p) => `${p.name}${'fault' in p ? ` ${JSON.stringify(p.fault)}` : ''}`).join(', ')}`,
  );

  const byOp = new Tally();
  const byPhase = new Tally();
  const byStatus = new Tally();
  const calls = new Tally();
  const callTotals = new Map<string, { ops: number; calls: number }>();
  const lost = new Map<string, number>();
  const outside = new Set<string>();
  const breaches = new Map<string, number>();
  for (const o of outcomes) {
    const labels = o.lost ? [`LOST: ${o.lost}`] : o.labels;
    for (const label of labels) {
      byOp.add(o.op.name, label);
      byPhase.add(o.phase, label);
      if (!o.lost && label !== 'ok' && !CONTRACT_CODES.has(label)) outside.add(label);
    }
    byStatus.add('answers', o.status === undefined ? 'none' : String(o.status));
    if (o.lost) lost.set(o.lost, (lost.get(o.lost) ?? 0) + 1);
    const upstream = run.calls.get(o.id) ?? 0;
    const key = `${o.op.name}\u0000${o.phase}`;
    const total = callTotals.get(key) ?? { ops: 0, calls: 0 };
    callTotals.set(key, { ops: total.ops + 1, calls: total.calls + upstream });
    if (o.op.invalid && upstream > 0) breaches.set(o.op.name, (breaches.get(o.op.name) ?? 0) + 1);
  }
  for (const [key, { ops, calls: sum }] of callTotals) {
    const [op = '', phase = ''] = key.split('\u0000');
    calls.add(op, phase, Math.round((sum / ops) * 100) / 100);
  }

  const rss = run.rss;
  const end = rss.at(-1)?.mb ?? 0;
  const lastThird = rss.filter((s) => s.atS >= (rss.at(-1)?.atS ?? 0) * (2 / 3));
  const trend = slope(lastThird);
  const unbounded = end > RSS_GROWTH_LIMIT * run.warmRss && trend > 0;
  console.log('\nFacade RSS (MB)');
  console.log(
    `  start ${rss[0]?.mb}, after warm-up ${run.warmRss}, end ${end}, peak ${peakRssMb(pid)}; at the end of each phase: ${rss
      .filter((s, i) => i > 0 && s.phase !== rss[i + 1]?.phase)
      .map((s) => `${s.phase} ${s.mb}`)
      .join(', ')}`,
  );
  console.log(
    `  judged ${unbounded ? 'UNBOUNDED' : 'bounded'}: unbounded means the end RSS above ${RSS_GROWTH_LIMIT}x the RSS after warm-up (${Math.round(RSS_GROWTH_LIMIT * run.warmRss)} MB) while the least-squares trend over the last third of the run still rises (now ${trend.toFixed(3)} MB/s)`,
  );

  byOp.print('Answers by code, per operation (an answer with several codes counts under each)');
  byPhase.print('Answers by code, per phase (of sending)');
  byStatus.print('HTTP status of the answers');
  calls.print("Upstream calls per operation, per phase (the sandbox's log, by x-request-id)");
  run.attempts.print(
    'Upstream attempts the facade counted (upstream_calls_total), by route and status',
  );

  console.log('\nCircuit breaker (upstream_breaker_state, upstream_breaker_transitions_total)');
  if (!run.breaker.reported) console.log('  not reported (the facade exposes no breaker metrics)');
  else {
    if (run.breaker.help) console.log(`  ${run.breaker.help}`);
    for (const change of run.breaker.changes) console.log(`  ${change}`);
    console.log(`  transitions: ${run.breaker.transitions ?? 'not reported'}`);
  }

  if (outside.size) console.log(`\nCodes outside the contract: ${[...outside].join(', ')}`);
  for (const [op, count] of breaches)
    console.log(`\nContract breach: ${count} "${op}" requests reached the upstream`);
  const lostCount = [...lost.values()].reduce((a, b) => a + b, 0);
  console.log(
    `\nLost requests: ${lostCount}${lostCount ? ` (${[...lost].map(([why, c]) => `${c} ${why}`).join(', ')})` : ''}`,
  );
  console.log(`Verdict: ${lostCount || unbounded ? 'FAIL' : 'pass'}`);
  if (lostCount || unbounded) process.exitCode = 1;
}

await main();
