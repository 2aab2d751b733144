import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';

const QUERY = '{ repositories(limit: 1) { total } }';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('WORKERS=2', () => {
  let facade: FacadeProcess;
  // The pids of the workers that have logged their listening line, in order.
  const workers = () =>
    facade.lines.filter((line) => typeof line.port === 'number').map((line) => Number(line.pid));
  const metrics = async () => (await fetch(facade.url.replace('/graphql', '/metrics'))).text();

  beforeAll(async () => {
    facade = await startFacade({
      WORKERS: '2',
      RATE_LIMIT_POINTS: '6',
      RATE_LIMIT_ADDRESS_POINTS: '1000',
    });
    const deadline = Date.now() + 20_000;
    while (workers().length < 2 && Date.now() < deadline) await sleep(50);
  }, 60_000);
  afterAll(() => facade?.stop(10_000));

  it('answers from both workers, and one /metrics counts what each served', async () => {
    expect(new Set(workers()).size).toBe(2);
    for (let i = 0; i < 10; i++) {
      expect((await post(facade.url, QUERY, bearer(`spread-${i}`))).status).toBe(200);
    }
    const text = await metrics();
    const served = [
      ...text.matchAll(/graphql_envelop_request_duration_count\{[^}]*worker="(\d+)"[^}]*\} (\d+)/g),
    ].map((match) => Number(match[2]));
    expect(served).toHaveLength(2);
    expect(served.every((count) => count > 0)).toBe(true);
    expect(served.reduce((a, b) => a + b, 0)).toBe(10);
  });

  it('holds a rate limit of N at N across the workers', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++)
      statuses.push((await post(facade.url, QUERY, bearer('one'))).status);
    expect(statuses).toEqual([...Array(6).fill(200), ...Array(3).fill(429)]);
  });

  it('keeps serving when a worker dies, replaces it and counts it', async () => {
    const [victim] = workers();
    process.kill(victim as number, 'SIGKILL');
    // The connections the dead worker held die with it: a client that reuses one sees it reset.
    // A connection the primary hands to the worker in the instant it dies is lost without a reset
    // (Node's round-robin hand-off), so the client waits for its own timeout. Either way it sends
    // again, as clients do for a query, on a new connection, which a live worker takes.
    const send = async (token: string) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await post(facade.url, QUERY, bearer(token), AbortSignal.timeout(3_000));
        } catch (error) {
          if (attempt === 3) throw error;
        }
      }
    };
    for (let i = 0; i < 4; i++) expect((await send(`after-${i}`)).status).toBe(200);
    await expect.poll(() => workers().length, { timeout: 15_000 }).toBe(3);
    expect(workers()).not.toContain(undefined);
    await expect
      .poll(async () => /facade_worker_restarts_total 1\b/.test(await metrics()), {
        timeout: 10_000,
      })
      .toBe(true);
    await expect
      .poll(async () => (await fetch(facade.url.replace('/graphql', '/readiness'))).status, {
        timeout: 10_000,
      })
      .toBe(200);
  }, 60_000);

  it('drains every worker on SIGTERM and exits 0', async () => {
    const before = facade.lines.length;
    expect(await facade.stop(15_000)).toBe(0);
    // The last lines may still be in the pipe when the process has exited.
    const stopping = () => facade.lines.slice(before);
    await expect
      .poll(() => stopping().some((line) => line.msg === 'every worker has stopped'))
      .toBe(true);
    expect(stopping().filter((line) => line.msg === 'stopped')).toHaveLength(2);
  });
});
