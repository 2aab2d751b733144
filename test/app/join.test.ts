// Calls in flight joined across requests (src/read/join.ts), driven through createInFlight over
// the real client and sandbox: who waits for whom, who is told of the call, and what a caller
// that goes away leaves behind. test/app/shared-calls.test.ts sees the same through the app.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FacadeError } from '../../src/errors.js';
import { createInFlight, joinKey } from '../../src/read/join.js';
import { CallBudget } from '../../src/upstream/budget.js';
import type { CompletedCall } from '../../src/upstream/client.js';
import { type Endpoint, listRepositories } from '../../src/upstream/endpoints.js';
import { deleteItem } from '../helpers/endpoints.js';
import { upstreamRequests, useHarness } from '../helpers/harness.js';

const ROUTE = 'GET /git/v1/repo';

/** A promise a test settles once it has seen what must happen while the upstream waits. */
function gate() {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** The code a call failed with, or `answered`. */
function outcome(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => 'answered',
    (error: unknown) => (error instanceof FacadeError ? error.extensions.code : error),
  );
}

const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, index) =>
    permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [
      item,
      ...rest,
    ]),
  );
}

describe('createInFlight', () => {
  const completed: CompletedCall[] = [];
  const h = useHarness({ onCall: (call) => completed.push(call) });

  /** An InFlight over the harness's client, and the routes it reported joined. */
  function joining(enabled = true) {
    const joins: string[] = [];
    const inFlight = createInFlight(h.client, { enabled, onJoin: (route) => joins.push(route) });
    return { inFlight, joins };
  }

  it('sends identical reads once while in flight, and tells each caller whether it joined', async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    const { inFlight, joins } = joining();
    const answers = [{ limit: 2 }, { limit: 2 }, { limit: 3 }, { limit: 2 }].map((page) =>
      inFlight.send(listRepositories, page, {}),
    );
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(2);
    held.open();
    const settled = await Promise.all(answers);
    expect(settled.map((answer) => answer.joined)).toEqual([false, true, false, true]);
    expect(settled[1]?.value).toBe(settled[0]?.value);
    expect(settled[2]?.value.repositories).toHaveLength(3);
    expect(joins).toEqual([ROUTE, ROUTE]);

    // Settled, the call is forgotten: the same read is sent again, by a caller that joined nothing.
    const again = await inFlight.send(listRepositories, { limit: 2 }, {});
    expect(again.joined).toBe(false);
    expect(again.value).not.toBe(settled[0]?.value);
    expect(again.value).toEqual(settled[0]?.value);
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(3);
    expect(joins).toHaveLength(2);
  });

  it('shares a failure with every caller waiting, and keeps it no longer', async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise, status: 404, times: 1 });
    const { inFlight } = joining();
    const answers = [1, 2, 3].map(() => outcome(inFlight.send(listRepositories, { limit: 1 }, {})));
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
    held.open();
    expect(await Promise.all(answers)).toEqual(['NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND']);
    const again = await inFlight.send(listRepositories, { limit: 1 }, {});
    expect(again).toMatchObject({ joined: false, value: { total: expect.any(Number) } });
  });

  it('sends every call on its own when disabled, and every write even when enabled', async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    h.sandbox.setFault('DELETE /test/v1/items/a', { until: held.promise, status: 204 });
    const off = joining(false);
    const on = joining(true);
    const answers = Promise.all([
      off.inFlight.send(listRepositories, { limit: 1 }, {}),
      off.inFlight.send(listRepositories, { limit: 1 }, {}),
      on.inFlight.send(deleteItem, { id: 'a' }, {}),
      on.inFlight.send(deleteItem, { id: 'a' }, {}),
    ]);
    await expect.poll(() => upstreamRequests(h.sandbox).length).toBe(4);
    held.open();
    expect((await answers).map((answer) => answer.joined)).toEqual([false, false, false, false]);
    expect([...off.joins, ...on.joins]).toEqual([]);
  });

  it("tells each caller's onCall of the call, a joiner's with its own callers and fields", async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    const { inFlight } = joining();
    const seen: Record<string, CompletedCall[]> = { first: [], many: [], one: [] };
    const answers = Promise.all([
      inFlight.send(
        listRepositories,
        { limit: 1 },
        { requestId: 'first', callers: 2, fields: ['a'], onCall: (c) => seen.first?.push(c) },
      ),
      inFlight.send(
        listRepositories,
        { limit: 1 },
        { requestId: 'many', callers: 3, fields: ['b', 'c'], onCall: (c) => seen.many?.push(c) },
      ),
      inFlight.send(listRepositories, { limit: 1 }, { onCall: (c) => seen.one?.push(c) }),
      // A joiner that asks to be told nothing is answered all the same.
      inFlight.send(listRepositories, { limit: 1 }, {}),
    ]);
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
    held.open();
    expect((await answers).map((answer) => answer.joined)).toEqual([false, true, true, true]);
    // The one call, under the request id of the caller that started it.
    const call = { route: ROUTE, outcome: 200, requestId: 'first', attempt: 1 };
    expect(seen.first).toEqual([expect.objectContaining({ ...call, callers: 2, fields: ['a'] })]);
    expect(seen.first?.[0]?.joined).toBeUndefined();
    expect(seen.many).toEqual([
      expect.objectContaining({ ...call, callers: 3, fields: ['b', 'c'], joined: true }),
    ]);
    expect(seen.one).toEqual([
      expect.objectContaining({ ...call, callers: 1, fields: undefined, joined: true }),
    ]);
  });

  it("spends one unit of each caller's budget, the starter's included", async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    // Nothing told of joins, as an app without metrics.
    const inFlight = createInFlight(h.client, { enabled: true });
    const budgets = [new CallBudget(5), new CallBudget(5)];
    const answers = Promise.all(
      budgets.map((budget) => inFlight.send(listRepositories, { limit: 1 }, { budget })),
    );
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
    held.open();
    await answers;
    expect(budgets.map((budget) => budget.left)).toEqual([4, 4]);
  });

  it('neither sends nor joins a call for a caller already gone', async () => {
    const { inFlight, joins } = joining();
    const gone = AbortSignal.abort();
    expect(await outcome(inFlight.send(listRepositories, { limit: 1 }, { signal: gone }))).toBe(
      'UPSTREAM_UNAVAILABLE',
    );
    expect(upstreamRequests(h.sandbox, ROUTE)).toEqual([]);

    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    const staying = inFlight.send(listRepositories, { limit: 1 }, {});
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
    const late = outcome(inFlight.send(listRepositories, { limit: 1 }, { signal: gone }));
    expect(joins).toEqual([]);
    expect(await late).toBe('UPSTREAM_UNAVAILABLE');
    held.open();
    expect((await staying).joined).toBe(false);
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
  });

  it('stops waiting at once for a caller that goes away, and goes on for the others', async () => {
    const { inFlight } = joining();
    completed.length = 0;
    // The caller that started the call leaves, then one that joined it.
    for (const leaver of [0, 1]) {
      const held = gate();
      h.sandbox.setFault(ROUTE, { until: held.promise });
      const leaving = new AbortController();
      const answers = [0, 1].map((caller) =>
        outcome(
          inFlight.send(
            listRepositories,
            { limit: 4 },
            { signal: caller === leaver ? leaving.signal : undefined },
          ),
        ),
      );
      await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
      leaving.abort();
      // Answered while the upstream still holds its answer.
      expect(await answers[leaver]).toBe('UPSTREAM_UNAVAILABLE');
      held.open();
      expect(await answers[1 - leaver]).toBe('answered');
      h.sandbox.clearRequests();
    }
    expect(completed.map((call) => call.outcome)).toEqual([200, 200]);
  });

  it('abandons the call once every caller has gone; a newer call keeps its place', async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    const { inFlight } = joining();
    completed.length = 0;
    const leaving = [new AbortController(), new AbortController()];
    const left = leaving.map((abort) =>
      outcome(inFlight.send(listRepositories, { limit: 5 }, { signal: abort.signal })),
    );
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
    for (const abort of leaving) abort.abort();
    // The abandoned call is still settling: a caller now joins nothing and sends its own.
    const newer = inFlight.send(listRepositories, { limit: 5 }, {});
    expect(await Promise.all(left)).toEqual(['UPSTREAM_UNAVAILABLE', 'UPSTREAM_UNAVAILABLE']);
    await expect.poll(() => completed.map((call) => call.outcome)).toEqual(['cancelled']);
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(2);
    // The abandoned call, settled, did not take the newer one's place with it.
    const joiner = inFlight.send(listRepositories, { limit: 5 }, {});
    held.open();
    expect((await newer).joined).toBe(false);
    expect((await joiner).joined).toBe(true);
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(2);
  });

  it("leaves no listener on a caller's signal, however its wait ended", async () => {
    const { inFlight } = joining();
    for (const fault of [{}, { status: 404 }]) {
      const held = gate();
      h.sandbox.setFault(ROUTE, { ...fault, until: held.promise });
      const signals = [new AbortController().signal, new AbortController().signal];
      const answers = signals.map((signal) =>
        outcome(inFlight.send(listRepositories, { limit: 1 }, { signal })),
      );
      await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
      expect(signals.map(listeners)).toEqual([1, 1]);
      held.open();
      await Promise.all(answers);
      expect(signals.map(listeners)).toEqual([0, 0]);
      h.sandbox.clearRequests();
    }

    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    const leaving = new AbortController();
    const staying = inFlight.send(listRepositories, { limit: 1 }, {});
    const left = outcome(inFlight.send(listRepositories, { limit: 1 }, { signal: leaving.signal }));
    leaving.abort();
    expect(await left).toBe('UPSTREAM_UNAVAILABLE');
    expect(listeners(leaving.signal)).toBe(0);
    held.open();
    await staying;
  });
});

describe('joinKey', () => {
  const call = { authorization: 'Bearer a' };

  it('is one key for the same forwarded headers in any order', () => {
    const headers: Array<[string, string]> = [
      ['x-tenant', 'red'],
      ['x-b', '1'],
      ['x-region', 'eu'],
      ['x-a', '2'],
    ];
    const keys = permutations(headers).map((order) =>
      joinKey(listRepositories, { limit: 1 }, { ...call, forwarded: Object.fromEntries(order) }),
    );
    expect(new Set(keys).size).toBe(1);
    const other = { ...Object.fromEntries(headers), 'x-region': 'us' };
    expect(joinKey(listRepositories, { limit: 1 }, { ...call, forwarded: other })).not.toBe(
      keys[0],
    );
  });

  it('is one key for reads that send the same query, whatever values they leave undefined', () => {
    // An undefined value is not sent (endpoints.ts): these ask the upstream the same thing.
    const omitting: Endpoint<{ limit?: number; offset?: number }, unknown> = {
      ...listRepositories,
      query: ({ limit }) => ({ limit }),
    };
    const key = joinKey(omitting, { limit: 1 }, call);
    expect(joinKey(listRepositories, { limit: 1 }, call)).toBe(key);
    expect(joinKey(listRepositories, { limit: 1, offset: undefined }, call)).toBe(key);
    expect(joinKey(listRepositories, { limit: 1, offset: 0 }, call)).not.toBe(key);

    const bare = { ...listRepositories, query: undefined };
    const empty = joinKey(bare, { limit: 1 }, call);
    expect(joinKey({ ...listRepositories, query: () => ({}) }, {}, call)).toBe(empty);
    expect(joinKey({ ...listRepositories, query: () => ({ limit: undefined }) }, {}, call)).toBe(
      empty,
    );
    expect(empty).not.toBe(key);
  });
});
