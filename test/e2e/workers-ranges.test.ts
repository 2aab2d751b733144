import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';

// Each document its own, so that the response cache never answers it: the kept ranges do.
let sent = 0;
const page = () => `{ page${sent++}: repositories(limit: 5) { total items { id } } }`;
const MUTATION = 'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }';
const CALLER = { authorization: 'Bearer mutating' };
const POLL = { interval: 50, timeout: 10_000 };

describe('WORKERS=2 without Redis', () => {
  let facade: FacadeProcess;
  beforeAll(async () => {
    facade = await startFacade(
      { WORKERS: '2', SANDBOX_CACHE_CONTROL: 'max-age=300', SANDBOX_FAULTS: 'true' },
      // Two workers each load the app: slow on a loaded machine.
      { timeoutMs: 90_000 },
    );
    const listening = () => facade.lines.filter((line) => typeof line.port === 'number').length;
    const deadline = Date.now() + 60_000;
    while (listening() < 2 && Date.now() < deadline) await sleep(50);
  }, 120_000);
  afterAll(() => facade?.stop(10_000));

  /** The request's log line: the worker that answered it, and the upstream calls it made. */
  const send = async (query: string, caller: Record<string, string> = CALLER) => {
    const requestId = randomUUID();
    const { status, body } = await post(facade.url, query, {
      ...caller,
      'x-request-id': requestId,
    });
    expect(status).toBe(200);
    let line: Record<string, unknown> | undefined;
    await expect
      .poll(() => {
        line = facade.lines.find((logged) => logged.requestId === requestId);
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
    // One document, repeated: the response cache answers it once a worker has kept it.
    const query = '{ repositories(limit: 5) { total items { id } } }';
    const caller = { authorization: 'Bearer answers' };
    const kept = new Set<number>();
    let before: number | undefined;
    for (let tries = 0; kept.size < 2 && tries < 80; tries++) {
      const { pid, hit, total } = await send(query, caller);
      before = total;
      if (hit) kept.add(pid);
    }
    expect(kept.size).toBe(2);
    expect(before).toBeTypeOf('number');

    // From now on the upstream counts one repository more: the page the facade asked for, but
    // for its total.
    const sandbox = facade.sandboxUrl as string;
    const log = (await (await fetch(`${sandbox}/__sandbox/requests`)).json()) as {
      requests: Array<{ method: string; path: string; query: Record<string, string> }>;
    };
    const asked = log.requests.findLast(
      (request) => request.method === 'GET' && request.path === '/git/v1/repo',
    );
    const search = new URLSearchParams(asked?.query).toString();
    const page = (await (
      await fetch(`${sandbox}/git/v1/repo?${search}`, { headers: caller })
    ).json()) as { total: number };
    const fault = { status: 200, body: { ...page, total: page.total + 1 } };
    const faulted = await fetch(`${sandbox}/__sandbox/faults/GET/git/v1/repo`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...fault, headers: { 'cache-control': 'max-age=300' } }),
    });
    expect(faulted.status).toBe(204);

    await send(MUTATION, caller);
    const answered = new Set<number>();
    const totals: Array<number | undefined> = [];
    for (let tries = 0; tries < 10 || (answered.size < 2 && tries < 80); tries++) {
      const { pid, total } = await send(query, caller);
      answered.add(pid);
      totals.push(total);
    }
    expect(answered.size).toBe(2);
    expect(new Set(totals)).toEqual(new Set([page.total + 1]));
    await fetch(`${sandbox}/__sandbox/faults`, { method: 'DELETE' });
  }, 60_000);
});
