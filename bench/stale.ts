// `npm run bench -- --stale`: the facade through upstream trouble, each scenario run with and
// without its RFC 5861 directive, on a sandbox of its own per run (core 1, with this load):
//
// - revalidate: the upstream sends `max-age=2` (then `max-age=2, stale-while-revalidate=30`) and
//   answers 100 ms late; callers ask for their pages over and over. Reported: p99, and upstream
//   calls per distinct page per 2 s (one is the target: one refresh a max-age).
// - outage: the upstream sends `max-age=2` (then `max-age=2, stale-if-error=60`); once every
//   caller's pages are kept, it answers 503 for 5 s, then resets every connection for 5 s.
//   Reported: answers with data, answers with errors, p99.
//
// The load is a fixed number of concurrent callers, each request parsed, since an answer with
// errors is a 200 too.
import type { ChildProcess } from 'node:child_process';
import { freePort } from '../test/helpers/net.js';
import { startFacade, startSandbox } from './processes.js';

const CONCURRENCY = 16;
const CALLERS = 8;
const PAGES = 5;
const REVALIDATE_S = Number(process.env.BENCH_STALE_DURATION_S ?? 12);
const OUTAGE_PHASE_S = 5;

interface Outcome {
  requests: number;
  withData: number;
  withErrors: number;
  p50: number;
  p99: number;
  /** Answers that took longer than the upstream's added latency: they waited for it. */
  over100ms: number;
}

const query = (page: number) =>
  JSON.stringify({
    query: `{ repositories(limit: 20, offset: ${page * 20}) { total items { id } } }`,
  });

/** `CONCURRENCY` loops of requests from `CALLERS` callers over `PAGES` pages, for `seconds`. */
async function load(url: string, seconds: number): Promise<Outcome> {
  const latencies: number[] = [];
  let withData = 0;
  let withErrors = 0;
  const until = performance.now() + seconds * 1000;
  let next = 0;
  const loop = async () => {
    while (performance.now() < until) {
      const n = next++;
      const started = performance.now();
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer caller-${n % CALLERS}`,
          },
          body: query(Math.floor(n / CALLERS) % PAGES),
        });
        const body = (await response.json()) as { data?: unknown; errors?: unknown[] };
        if (body.errors?.length) withErrors++;
        else if (body.data) withData++;
      } catch {
        withErrors++;
      }
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.floor(q * (latencies.length - 1))] ?? 0);
  const over100ms = latencies.filter((ms) => ms > 100).length;
  return {
    requests: latencies.length,
    withData,
    withErrors,
    p50: at(0.5),
    p99: at(0.99),
    over100ms,
  };
}

async function upstreamCalls(sandboxUrl: string): Promise<number> {
  const response = await fetch(`${sandboxUrl}/__sandbox/counts`);
  const { counts } = (await response.json()) as { counts: Record<string, number> };
  return counts['GET /git/v1/repo'] ?? 0;
}

const fault = (sandboxUrl: string, body: object) =>
  fetch(`${sandboxUrl}/__sandbox/faults/GET/git/v1/repo`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** A sandbox sending `cacheControl` and the facade in front of it; both stopped after `run`. */
async function withServers<T>(
  cacheControl: string,
  children: ChildProcess[],
  run: (urls: { sandbox: string; graphql: string }) => Promise<T>,
): Promise<T> {
  const [sandboxPort, facadePort] = [await freePort(), await freePort()];
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const sandbox = await startSandbox(sandboxPort, {
    SANDBOX_REPOSITORIES: '1000',
    SANDBOX_CACHE_CONTROL: cacheControl,
    SANDBOX_FAULTS: 'true',
  });
  children.push(sandbox);
  const facade = await startFacade(facadePort, sandboxUrl, { UPSTREAM_RETRIES: '0' });
  children.push(facade);
  try {
    return await run({ sandbox: sandboxUrl, graphql: `http://127.0.0.1:${facadePort}/graphql` });
  } finally {
    facade.kill('SIGTERM');
    sandbox.kill('SIGTERM');
  }
}

async function revalidate(cacheControl: string, children: ChildProcess[]) {
  return withServers(cacheControl, children, async (urls) => {
    await fault(urls.sandbox, { delayMs: 100 });
    await load(urls.graphql, 3);
    const before = await upstreamCalls(urls.sandbox);
    const outcome = await load(urls.graphql, REVALIDATE_S);
    const calls = (await upstreamCalls(urls.sandbox)) - before;
    const perPagePer2s = calls / (CALLERS * PAGES) / (REVALIDATE_S / 2);
    return {
      cacheControl,
      ...outcome,
      upstreamCalls: calls,
      perPagePer2s: +perPagePer2s.toFixed(2),
    };
  });
}

async function outage(cacheControl: string, children: ChildProcess[]) {
  return withServers(cacheControl, children, async (urls) => {
    // Every caller's pages kept, then past their max-age before the outage begins.
    await load(urls.graphql, 3);
    await fault(urls.sandbox, { status: 503, body: { message: 'maintenance' } });
    const failing = load(urls.graphql, OUTAGE_PHASE_S * 2);
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_PHASE_S * 1000));
    await fault(urls.sandbox, { reset: true });
    const outcome = await failing;
    return { cacheControl, ...outcome };
  });
}

export async function staleScenarios(children: ChildProcess[]) {
  const revalidation = [
    await revalidate('max-age=2', children),
    await revalidate('max-age=2, stale-while-revalidate=30', children),
  ];
  const outages = [
    await outage('max-age=2', children),
    await outage('max-age=2, stale-if-error=60', children),
  ];
  console.log('\nStale-while-revalidate (upstream 100 ms late, max-age=2):');
  console.table(revalidation);
  console.log('\nOutage (503 for 5 s, then resets for 5 s, after the cache is warm):');
  console.table(outages);
  return { revalidation, outages };
}
