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
      { WORKERS: '2', SANDBOX_CACHE_CONTROL: 'max-age=300' },
      // Two workers each load the app: slow on a loaded machine.
      { timeoutMs: 90_000 },
    );
    const listening = () => facade.lines.filter((line) => typeof line.port === 'number').length;
    const deadline = Date.now() + 60_000;
    while (listening() < 2 && Date.now() < deadline) await sleep(50);
  }, 120_000);
  afterAll(() => facade?.stop(10_000));

  /** The request's log line: the worker that answered it, and the upstream calls it made. */
  const send = async (query: string) => {
    const requestId = randomUUID();
    expect((await post(facade.url, query, { ...CALLER, 'x-request-id': requestId })).status).toBe(
      200,
    );
    let line: Record<string, unknown> | undefined;
    await expect
      .poll(() => {
        line = facade.lines.find((logged) => logged.requestId === requestId);
        return line !== undefined;
      }, POLL)
      .toBe(true);
    return { pid: Number(line?.pid), calls: Number(line?.upstreamCalls) };
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
});
