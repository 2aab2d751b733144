import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';
import { hasRedis, startRedis, stopRedis } from '../helpers/redis.js';

// Each document its own, so that the response cache never answers it: the kept ranges do.
let sent = 0;
const page = () => `{ page${sent++}: repositories(limit: 5) { total items { id } } }`;
const MUTATION = 'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }';
const CALLER = { authorization: 'Bearer mutating' };
const POLL = { interval: 50, timeout: 10_000 };

/** The facade with WORKERS=2, once both workers listen, and a request's view of it. */
function twoWorkers(env: () => Record<string, string>) {
  let facade: FacadeProcess | undefined;
  beforeAll(async () => {
    facade = await startFacade(
      { WORKERS: '2', SANDBOX_CACHE_CONTROL: 'max-age=300', SANDBOX_FAULTS: 'true', ...env() },
      // Two workers each load the app: slow on a loaded machine.
      { timeoutMs: 90_000 },
    );
    const listening = () => facade?.lines.filter((line) => typeof line.port === 'number').length;
    const deadline = Date.now() + 60_000;
    while ((listening() ?? 0) < 2 && Date.now() < deadline) await sleep(50);
  }, 120_000);
  afterAll(() => facade?.stop(10_000));

  const started = () => facade as FacadeProcess;
  /** The request's log line: the worker that answered it, and the upstream calls it made. */
  const send = async (query: string, caller: Record<string, string> = CALLER) => {
    const requestId = randomUUID();
    const { url, lines } = started();
    const { status, body } = await post(url, query, { ...caller, 'x-request-id': requestId });
    expect(status).toBe(200);
    let line: Record<string, unknown> | undefined;
    await expect
      .poll(() => {
        line = lines.find((logged) => logged.requestId === requestId);
        return line !== undefined;
      }, POLL)
      .toBe(true);
    const data = body.data as { repositories?: { total: number } } | undefined;
    return {
      pid: Number(line?.pid),
      calls: Number(line?.upstreamCalls),
      hit: line?.responseCache === 'hit',
      total: data?.repositories?.total,
    };
  };
  return { started, send };
}

type Workers = ReturnType<typeof twoWorkers>;

/**
 * One document, repeated once both workers answer it from the response cache, then the caller's
 * mutation, after which the upstream counts one repository more: no worker answers the old total.
 */
async function answersAfterMutation({ started, send }: Workers, name: string) {
  const query = '{ repositories(limit: 5) { total items { id } } }';
  const caller = { authorization: `Bearer ${name}` };
  const kept = new Set<number>();
  for (let tries = 0; kept.size < 2 && tries < 80; tries++) {
    const { pid, hit } = await send(query, caller);
    if (hit) kept.add(pid);
  }
  expect(kept.size).toBe(2);

  // The page the facade asks for, but for its total.
  const sandbox = started().sandboxUrl as string;
  const log = (await (await fetch(`${sandbox}/__sandbox/requests`)).json()) as {
    requests: Array<{ method: string; path: string; query: Record<string, string> }>;
  };
  const asked = log.requests.findLast(
    (request) => request.method === 'GET' && request.path === '/git/v1/repo',
  );
  const search = new URLSearchParams(asked?.query).toString();
  const upstream = (await (
    await fetch(`${sandbox}/git/v1/repo?${search}`, { headers: caller })
  ).json()) as { total: number };
  const fault = { status: 200, body: { ...upstream, total: upstream.total + 1 } };
  const faulted = await fetch(`${sandbox}/__sandbox/faults/GET/git/v1/repo`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...fault, headers: { 'cache-control': 'max-age=300' } }),
  });
  expect(faulted.status).toBe(204);

  try {
    await send(MUTATION, caller);
    const answered = new Set<number>();
    const totals: Array<number | undefined> = [];
    for (let tries = 0; tries < 10 || (answered.size < 2 && tries < 80); tries++) {
      const { pid, total } = await send(query, caller);
      answered.add(pid);
      totals.push(total);
    }
    expect(answered.size).toBe(2);
    expect(new Set(totals)).toEqual(new Set([upstream.total + 1]));
  } finally {
    await fetch(`${sandbox}/__sandbox/faults`, { method: 'DELETE' });
  }
}

describe('WORKERS=2 without Redis', () => {
  const workers = twoWorkers(() => ({}));
  const { send } = workers;

  it("forgets the caller's kept ranges in every worker before its mutation answers", async () => {
    // Until each worker has answered the page from what it kept.
    const kept = new Set<number>();
    for (let tries = 0; kept.size < 2 && tries < 80; tries++) {
      const { pid, calls } = await send(page());
      if (calls === 0) kept.add(pid);
    }
    expect(kept.size).toBe(2);

    await send(MUTATION);
    // The first read each worker answers after it asks the upstream again.
    const first = new Map<number, number>();
    for (let tries = 0; first.size < 2 && tries < 80; tries++) {
      const { pid, calls } = await send(page());
      if (!first.has(pid)) first.set(pid, calls);
    }
    expect([...first.values()]).toEqual([1, 1]);
  }, 60_000);

  it("forgets the caller's kept answers in every worker before its mutation answers", async () => {
    await answersAfterMutation(workers, 'answers');
  }, 60_000);
});

describe.skipIf(!hasRedis)('WORKERS=2 with the response cache and the ranges in Redis', () => {
  let redis: { url: string; process: ChildProcess } | undefined;
  beforeAll(async () => {
    redis = await startRedis();
  });
  // After the facade's own afterAll: it stops before its Redis does.
  afterAll(() => stopRedis(redis?.process));
  // A deadline a loaded test machine cannot miss: what is tested is the eviction.
  const workers = twoWorkers(() => ({ REDIS_URL: redis?.url ?? '', REDIS_TIMEOUT_MS: '2000' }));

  it("forgets the caller's kept answers for every worker before its mutation answers", async () => {
    await answersAfterMutation(workers, 'answers-in-redis');
  }, 60_000);
});
