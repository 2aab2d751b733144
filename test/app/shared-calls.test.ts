// Upstream reads shared across concurrent requests (src/read/join.ts): who joins whom,
// and that the budget, the breaker and cancellation stay each request's own.
import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { joinKey } from '../../src/read/join.js';
import type { CompletedCall } from '../../src/upstream/client.js';
import { listRepositories } from '../../src/upstream/endpoints.js';
import {
  type GraphQLResponse,
  type Harness,
  upstreamRequests,
  useHarness,
} from '../helpers/harness.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: inject('fcSeed') });

const ROUTE = 'GET /git/v1/repo';
const TENANT = 'x-tenant';
const PAGE = `query Page($limit: Int, $offset: Int) {
  repositories(limit: $limit, offset: $offset) { total offset items { id defaultBranch } }
}`;

interface Page {
  repositories: { total: number; offset: number; items: Array<{ id: string }> } | null;
}

interface Shown {
  upstreamCalls?: {
    calls: Array<Record<string, unknown>>;
    budget: { used: number; limit: number };
  };
}

/** A promise a test settles once it has seen what must happen while the upstream waits. */
function gate() {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** upstream_calls_joined_total for the list route, from the app's /metrics. */
async function joined(h: Harness): Promise<number> {
  const text = await (await h.app.fetch('http://facade.test/metrics')).text();
  const match = /^upstream_calls_joined_total\{route="GET \/git\/v1\/repo"\} (\d+)$/m.exec(text);
  return Number(match?.[1] ?? 0);
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('shared upstream calls', () => {
  const calls: CompletedCall[] = [];
  const h = useHarness({
    config: { forwardHeaders: [TENANT] },
    onCall: (call) => calls.push(call),
  });

  /** Sends `count` requests at once behind a gate, and opens it once `joins` of them have joined. */
  async function together(
    requests: Array<() => Promise<GraphQLResponse<Page>>>,
    { upstream, joins }: { upstream: number; joins: number },
  ) {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise, echoHeader: TENANT });
    const before = await joined(h);
    const answers = Promise.all(requests.map((request) => request()));
    try {
      await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(upstream);
      await expect.poll(async () => (await joined(h)) - before).toBe(joins);
    } catch (error) {
      // Settled before the next run, so that a shrinking property starts from a quiet upstream.
      held.open();
      await answers;
      throw error;
    }
    held.open();
    return answers;
  }

  it('makes one upstream call for 32 concurrent identical requests of one caller', async () => {
    const ask = () => h.gql<Page>(PAGE, { limit: 5 }, bearer('one'));
    const answers = await together(
      Array.from({ length: 32 }, () => ask),
      {
        upstream: 1,
        joins: 31,
      },
    );
    for (const answer of answers) {
      expect(answer.errors).toBeUndefined();
      expect(answer.data).toEqual(answers[0]?.data);
    }
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
    // Settled, the call is no longer shared: the next identical request makes its own.
    await ask();
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(2);
  });

  it('makes a call of its own for each credential, each answering its own caller', async () => {
    const tokens = ['alice', 'bob', 'alice', 'bob', 'alice', 'bob'];
    const answers = await together(
      tokens.map((token) => () => h.gql<Page>(PAGE, { limit: 3 }, bearer(token))),
      { upstream: 2, joins: 4 },
    );
    const sent = upstreamRequests(h.sandbox, ROUTE)
      .map((r) => r.headers.authorization)
      .sort();
    expect(sent).toEqual(['Bearer alice', 'Bearer bob']);
    h.sandbox.clearFaults();
    const alone = {
      alice: (await h.gql<Page>(PAGE, { limit: 3 }, bearer('alice'))).data,
      bob: (await h.gql<Page>(PAGE, { limit: 3 }, bearer('bob'))).data,
    };
    expect(alone.alice).not.toEqual(alone.bob);
    // The echoed (absent) tenant aside, each answer is its own caller's list.
    const strip = (data: Page | null | undefined) =>
      data?.repositories?.items.map((item) => item.id.replace(/~$/, ''));
    tokens.forEach((token, index) => {
      expect(strip(answers[index]?.data)).toEqual(strip(alone[token as 'alice' | 'bob']));
    });
  });

  it('makes a call of its own for each value of a forwarded header', async () => {
    const tenants = ['red', 'blue', 'red', 'blue'];
    const answers = await together(
      tenants.map(
        (tenant) => () => h.gql<Page>(PAGE, { limit: 2 }, { ...bearer('one'), [TENANT]: tenant }),
      ),
      { upstream: 2, joins: 2 },
    );
    tenants.forEach((tenant, index) => {
      const ids = answers[index]?.data?.repositories?.items.map((item) => item.id) ?? [];
      expect(ids.length).toBe(2);
      for (const id of ids) expect(id.endsWith(`~${tenant}`)).toBe(true);
    });
  });

  it('shows a joined call as joined, and counts it in the joiner’s own budget', async () => {
    const answers = await together(
      [1, 2].map(() => () => h.gql<Page>(PAGE, { limit: 4 }, bearer('one'))),
      { upstream: 1, joins: 1 },
    );
    const shown = answers.map((answer) => (answer.extensions as Shown).upstreamCalls);
    const flags = shown.map((calls) => calls?.calls[0]?.joined).sort();
    expect(flags).toEqual([true, undefined]);
    for (const calls of shown) {
      expect(calls?.calls).toHaveLength(1);
      expect(calls?.calls[0]).toMatchObject({ status: 200, fields: ['repositories'] });
      expect(calls?.budget.used).toBe(1);
    }
  });

  it('fails no other caller when one goes away, and abandons the call when all have', async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    const before = await joined(h);
    const leaving = new AbortController();
    const left = Promise.resolve(
      h.app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer('one') },
        body: JSON.stringify({ query: PAGE, variables: { limit: 6 } }),
        signal: leaving.signal,
      }),
    ).then(
      () => 'answered',
      () => 'aborted',
    );
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
    const staying = h.gql<Page>(PAGE, { limit: 6 }, bearer('one'));
    await expect.poll(async () => (await joined(h)) - before).toBe(1);
    leaving.abort();
    await left;
    held.open();
    const answer = await staying;
    expect(answer.errors).toBeUndefined();
    expect(answer.data?.repositories?.items).toHaveLength(6);
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);

    // Every caller gone: the call itself is cancelled, and the next caller makes its own.
    const again = gate();
    h.sandbox.setFault(ROUTE, { until: again.promise });
    calls.length = 0;
    const both = [new AbortController(), new AbortController()];
    const gone = both.map((abort) =>
      Promise.resolve(
        h.app.fetch('http://facade.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...bearer('two') },
          body: JSON.stringify({ query: PAGE, variables: { limit: 6 } }),
          signal: abort.signal,
        }),
      ).catch(() => undefined),
    );
    await expect.poll(async () => (await joined(h)) - before).toBe(2);
    for (const abort of both) abort.abort();
    await Promise.all(gone);
    await expect.poll(() => calls.map((call) => call.outcome)).toEqual(['cancelled']);
    again.open();
    h.sandbox.clearFaults();
    expect((await h.gql<Page>(PAGE, { limit: 6 }, bearer('two'))).errors).toBeUndefined();
  });

  it('shares a failure with the callers waiting, and keeps it no longer', async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise, status: 404 });
    const before = await joined(h);
    const answers = Promise.all([1, 2, 3].map(() => h.gql<Page>(PAGE, {}, bearer('one'))));
    await expect.poll(async () => (await joined(h)) - before).toBe(2);
    held.open();
    for (const answer of await answers)
      expect(answer.errors?.[0]?.extensions.code).toBe('NOT_FOUND');
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
    h.sandbox.clearFaults();
    expect((await h.gql<Page>(PAGE, {}, bearer('one'))).errors).toBeUndefined();
  });

  it('never joins a mutation', async () => {
    const create = `mutation { createDomainVerification(input: { domain: "joined.example" }) { id } }`;
    const held = gate();
    const WRITE = 'POST /domains/v1/verifications';
    h.sandbox.setFault(WRITE, { until: held.promise });
    const answers = Promise.all([1, 2].map(() => h.gql(create, {}, bearer('one'))));
    await expect.poll(() => upstreamRequests(h.sandbox, WRITE).length).toBe(2);
    held.open();
    await answers;
  });

  it('isolates every caller whose upstream inputs differ (property)', async () => {
    const caller = fc.record({
      token: fc.constantFrom(undefined, 'alice', 'bob', 'ALICE'),
      tenant: fc.constantFrom(undefined, 'red', 'blue', 'red,blue'),
      page: fc.constantFrom({ limit: 2 }, { limit: 2, offset: 1 }, { limit: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(caller, { minLength: 1, maxLength: 8 }), async (callers) => {
        h.sandbox.clearRequests();
        const headers = (c: (typeof callers)[number]) => ({
          ...(c.token ? bearer(c.token) : {}),
          ...(c.tenant ? { [TENANT]: c.tenant } : {}),
        });
        const key = (c: (typeof callers)[number]) =>
          JSON.stringify([c.token ?? null, c.tenant ?? null, c.page]);
        const distinct = new Set(callers.map(key)).size;
        const answers = await together(
          callers.map((c) => () => h.gql<Page>(PAGE, c.page, headers(c))),
          { upstream: distinct, joins: callers.length - distinct },
        );
        // Each answer is exactly what its caller gets asking alone.
        for (const [index, c] of callers.entries()) {
          const alone = await h.gql<Page>(PAGE, c.page, headers(c));
          expect(answers[index]?.errors).toBeUndefined();
          expect(answers[index]?.data).toEqual(alone.data);
        }
      }),
      { numRuns: 25 },
    );
  });
});

describe('JOIN_UPSTREAM_CALLS=false', () => {
  const h = useHarness({ config: { joinUpstreamCalls: false } });

  it('sends every identical request on its own', async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    const answers = Promise.all([1, 2, 3].map(() => h.gql<Page>(PAGE, { limit: 2 })));
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(3);
    held.open();
    await answers;
  });
});

describe('shared calls in service-key mode', () => {
  const h = useHarness({
    config: { upstream: { apiKey: 'facade-service-key' }, clientTokens: ['token-a', 'token-b'] },
  });

  it('never joins two callers, though the one key makes their calls alike', async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise });
    const answers = Promise.all(
      ['token-a', 'token-b', 'token-a'].map((token) =>
        h.gql<Page>(PAGE, { limit: 2 }, bearer(token)),
      ),
    );
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(2);
    await expect.poll(async () => joined(h)).toBe(1);
    held.open();
    const [a, b] = await answers;
    expect(a?.data).toEqual(b?.data);
    expect(upstreamRequests(h.sandbox, ROUTE).map((r) => r.headers.authorization)).toEqual([
      'Bearer facade-service-key',
      'Bearer facade-service-key',
    ]);
  });
});

describe('the circuit breaker with joined calls', () => {
  const h = useHarness({
    config: { upstream: { retries: 0, breakerThreshold: 2, breakerCooldownMs: 60_000 } },
  });

  it('counts a failed call once, however many callers it failed', async () => {
    const held = gate();
    h.sandbox.setFault(ROUTE, { until: held.promise, status: 503 });
    const answers = Promise.all([1, 2, 3, 4].map(() => h.gql<Page>(PAGE, { limit: 2 })));
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
    held.open();
    for (const answer of await answers)
      expect(answer.errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
    h.sandbox.clearFaults();
    // One fault of the two that open it: the circuit is still closed.
    const next = await h.gql<Page>(PAGE, { limit: 2 });
    expect(next.errors).toBeUndefined();
  });
});

describe('joinKey', () => {
  it('keeps the request id and trace out of the key, and every upstream input in it', () => {
    const base = { authorization: 'Bearer a', forwarded: { 'x-b': '1', 'x-a': '2' } };
    const key = joinKey(listRepositories, { limit: 1 }, base);
    expect(
      joinKey(
        listRepositories,
        { limit: 1 },
        {
          ...base,
          forwarded: { 'x-a': '2', 'x-b': '1' },
        },
      ),
    ).toBe(key);
    for (const other of [
      joinKey(listRepositories, { limit: 1 }, { ...base, authorization: 'Bearer b' }),
      joinKey(listRepositories, { limit: 1 }, { ...base, authorization: undefined }),
      joinKey(listRepositories, { limit: 1 }, { ...base, caller: 'Bearer other' }),
      joinKey(listRepositories, { limit: 1 }, { ...base, forwarded: { 'x-a': '2' } }),
      joinKey(listRepositories, { limit: 1 }, { ...base, forwarded: { 'x-a': '2', 'x-b': '' } }),
      joinKey(listRepositories, { limit: 1, offset: 0 }, base),
      joinKey(listRepositories, { limit: 2 }, base),
    ])
      expect(other).not.toBe(key);
  });
});

describe('a request of many upstream calls', () => {
  // Pages never merged: fifteen aliases are fifteen calls in flight at once.
  const h = useHarness({ config: { maxCoalescedRange: 0, maxUpstreamCalls: 40 } });

  it('warns of no listener leak on its abort signal', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const aliases = Array.from(
        { length: 15 },
        (_, i) => `p${i}: repositories(limit: 1, offset: ${i * 3}) { items { id } }`,
      );
      const answer = await h.gql(`{ ${aliases.join(' ')} }`, undefined, bearer('many'));
      expect(answer.errors).toBeUndefined();
      // Node emits its warning on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(15);
    expect(warnings.map((warning) => warning.name)).not.toContain('MaxListenersExceededWarning');
  });
});
