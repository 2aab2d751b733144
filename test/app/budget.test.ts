import { describe, expect, it } from 'vitest';
import { createHarness, postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';

const ROUTE = 'GET /git/v1/repo';
type Page = { items: Array<{ id: string }> } | null;

const aliases = (count: number, field: (i: number) => string) =>
  `{ ${Array.from({ length: count }, (_, i) => `a${i}: ${field(i)}`).join(' ')} }`;

describe('upstream call budget', () => {
  // Pages of one request are never merged here unless a test says so.
  const h = useHarness({
    sandbox: { repositories: 60, maxPageSize: 10 },
    config: { maxCoalescedRange: 0, maxUpstreamCalls: 5, maxPageSize: 100 },
  });

  it('answers the fields that fit and fails the rest with UPSTREAM_BUDGET_EXCEEDED', async () => {
    const result = await h.gql<Record<string, Page>>(
      aliases(15, (i) => `repositories(limit: 1, offset: ${i * 2}) { items { id } }`),
    );
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(5);
    const answered = Object.entries(result.data ?? {}).filter(([, page]) => page !== null);
    expect(answered.map(([name]) => name)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4']);
    expect(answered.every(([, page]) => page?.items.length === 1)).toBe(true);
    expect(result.errors?.map((error) => error.path?.[0])).toEqual(
      Array.from({ length: 10 }, (_, i) => `a${i + 5}`),
    );
    for (const error of result.errors ?? []) {
      expect(error.extensions.code).toBe('UPSTREAM_BUDGET_EXCEEDED');
      expect(error.message).toContain('MAX_UPSTREAM_CALLS=5');
    }
  });

  it('counts coalesced pages once', async () => {
    const app = h.createApp({ config: { maxUpstreamCalls: 1, maxCoalescedRange: 200 } });
    const result = await postGraphQL(
      app,
      aliases(
        7,
        (i) =>
          `repositories(limit: 5, offset: ${i % 3}) { items { id } } b${i}: repositoriesConnection(first: 4) { totalCount }`,
      ),
    );
    expect(result.errors).toBeUndefined();
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
  });

  it('fails a short page whose fill would not fit before spending the fill calls', async () => {
    const fresh = await createHarness({
      sandbox: { repositories: 60, maxPageSize: 10 },
      config: { maxUpstreamCalls: 2 },
    });
    try {
      // Whether the page size is unknown (the first two) or trusted (the third, whose plan of
      // three calls does not fit), the first call is made and its short answer shows that the
      // other two would not fit: they are not made.
      for (let i = 0; i < 3; i++) {
        fresh.sandbox.clearRequests();
        const result = await fresh.gql('{ repositories(limit: 25) { items { id } } }');
        expect(result.errors?.[0]?.extensions.code).toBe('UPSTREAM_BUDGET_EXCEEDED');
        expect(result.errors?.[0]?.path).toEqual(['repositories']);
        expect(upstreamRequests(fresh.sandbox, ROUTE)).toHaveLength(1);
      }

      // Within the budget, a page is filled in full.
      fresh.sandbox.clearRequests();
      const within = await fresh.gql<{ repositories: Page }>(
        '{ repositories(limit: 20) { items { id } } }',
      );
      expect(within.errors).toBeUndefined();
      expect(within.data?.repositories?.items).toHaveLength(20);
      expect(upstreamRequests(fresh.sandbox, ROUTE)).toHaveLength(2);
    } finally {
      await fresh.close();
    }
  });

  it('takes one call per mutation as it goes', async () => {
    const app = h.createApp({ config: { maxUpstreamCalls: 1 } });
    const result = await postGraphQL(
      app,
      `mutation {
        a: createDomainVerification(input: { domain: "a.example.com" }) { domain }
        b: createDomainVerification(input: { domain: "b.example.com" }) { domain }
      }`,
    );
    // The mutation fields are non-null (the contract's types), so the answer's data is null.
    expect(result.errors?.[0]?.extensions.code).toBe('UPSTREAM_BUDGET_EXCEEDED');
    expect(result.errors?.[0]?.path).toEqual(['b']);
    expect(upstreamRequests(h.sandbox, 'POST /domains/v1/verifications')).toHaveLength(1);
  });
});

describe("the upstream's learned page size", () => {
  // The upstream's real cap (100) is above every page here: any short answer is an odd one.
  const h = useHarness({ sandbox: { repositories: 60 } });
  const PAGE = '{ repositories(limit: 25) { items { id } } }';
  /** One caller's page of two answered short once (one item), then filled by a second call. */
  const oddShortPage = async (app: ReturnType<typeof h.createApp>) => {
    h.sandbox.setFault(ROUTE, { shortPage: 1, times: 1 });
    const odd = await postGraphQL<{ repositories: Page }>(
      app,
      '{ repositories(limit: 2) { items { id } } }',
      {},
      { authorization: 'Bearer caller-a' },
    );
    expect(odd.data?.repositories?.items).toHaveLength(2);
  };

  it("is not taught by one short answer to one caller: another caller's page still answers", async () => {
    const app = h.createApp();
    await oddShortPage(app);
    h.sandbox.clearRequests();
    const other = await postGraphQL<{ repositories: Page }>(
      app,
      PAGE,
      {},
      {
        authorization: 'Bearer caller-b',
      },
    );
    expect(other.errors).toBeUndefined();
    expect(other.data?.repositories?.items).toHaveLength(25);
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
  });

  it('fetches a page whose plan exceeds the budget and lets the answer decide', async () => {
    // Two agreeing short answers make the size trusted; the plan it gives (25 calls) is wrong.
    const app = h.createApp();
    await oddShortPage(app);
    await oddShortPage(app);
    h.sandbox.clearRequests();
    const page = await postGraphQL<{ repositories: Page }>(app, PAGE);
    expect(page.errors).toBeUndefined();
    expect(page.data?.repositories?.items).toHaveLength(25);
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
  });

  it('lets the fields whose plan fits go first, and gives one that does not fit what is left', async () => {
    const capped = await createHarness({
      sandbox: { repositories: 60, maxPageSize: 10 },
      config: { maxCoalescedRange: 0, maxUpstreamCalls: 2 },
    });
    try {
      // Two short answers of 10 make the size trusted: the first field below plans 3 calls.
      for (let i = 0; i < 2; i++) await capped.gql('{ repositories(limit: 11) { items { id } } }');
      capped.sandbox.clearRequests();
      const result = await capped.gql<Record<string, Page>>(`{
        a: repositories(limit: 25) { items { id } }
        b: repositories(limit: 1, offset: 30) { items { id } }
        c: repositories(limit: 1, offset: 40) { items { id } }
      }`);
      expect(result.data?.a).toBeNull();
      expect(result.errors?.map((error) => error.extensions.code)).toEqual([
        'UPSTREAM_BUDGET_EXCEEDED',
      ]);
      expect(result.data?.b?.items).toHaveLength(1);
      expect(result.data?.c?.items).toHaveLength(1);
      expect(upstreamRequests(capped.sandbox, ROUTE)).toHaveLength(2);
    } finally {
      await capped.close();
    }
  });
});

describe('fan-out of one small document', () => {
  const h = useHarness({ sandbox: { repositories: 5000, maxPageSize: 10 } });
  const attack = (limit: number) =>
    aliases(15, (i) => `repositories(limit: ${limit}, offset: ${i * 300}) { items { id } }`);

  it('refuses a limit above MAX_PAGE_SIZE with no upstream call', async () => {
    const result = await h.gql(attack(2147483647));
    expect(result.errors).toHaveLength(15);
    for (const error of result.errors ?? []) {
      expect(error.extensions.code).toBe('BAD_USER_INPUT');
      expect(error.message).toContain('limit');
      expect(error.message).toContain('100 (MAX_PAGE_SIZE)');
    }
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('causes at most MAX_UPSTREAM_CALLS calls with limits within MAX_PAGE_SIZE', async () => {
    const result = await h.gql(attack(100));
    expect(result.errors?.length).toBeGreaterThan(0);
    expect(upstreamRequests(h.sandbox, ROUTE).length).toBeLessThanOrEqual(20);
  });

  it('lets the default budget fill a full page from an upstream with short pages', async () => {
    const result = await h.gql<{ repositories: Page }>(
      '{ repositories(limit: 100, offset: 7) { items { id } } }',
    );
    expect(result.errors).toBeUndefined();
    expect(result.data?.repositories?.items).toHaveLength(100);
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(10);
  });
});

describe('pages merged into one range past the budget', () => {
  // Pages of 7: two adjacent pages of 100 merge into one range of 200 (29 calls), past the default
  // budget of 20, while either alone (15 calls) fits.
  const h = useHarness({ sandbox: { repositories: 300, maxPageSize: 7 } });

  it('answers the pages the budget covers, and fails the rest without spending calls on them', async () => {
    // Twice: first with the page size unknown, then with it learned and trusted.
    for (let i = 0; i < 2; i++) {
      h.sandbox.clearRequests();
      const result = await h.gql<{ a: Page; b: Page; c: { total: number } | null }>(`{
        a: repositories(limit: 100, offset: 0) { items { id } }
        b: repositories(limit: 100, offset: 100) { items { id } }
        c: repositories(limit: 0) { total }
      }`);
      expect(result.data?.a?.items).toHaveLength(100);
      expect(result.data?.c?.total).toBe(300);
      expect(result.data?.b).toBeNull();
      expect(result.errors?.map((error) => [error.path?.[0], error.extensions.code])).toEqual([
        ['b', 'UPSTREAM_BUDGET_EXCEEDED'],
      ]);
      // The calls that finished a (15 pages of 7), none toward b.
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(15);
    }
  });

  it('answers a total-only field from any call that brought total', async () => {
    // The range after the total-only field's host fails outright; the direct page still answers.
    const app = h.createApp({ config: { maxUpstreamCalls: 1 } });
    const result = await postGraphQL<{ a: Page; c: { total: number } | null }>(
      app,
      `{
        a: repositories { items { id } }
        b: repositories(limit: 100, offset: 100) { items { id } }
        c: repositories(limit: 0) { total }
      }`,
    );
    expect(result.data?.a?.items).toHaveLength(7);
    expect(result.data?.c?.total).toBe(300);
    expect(result.errors?.map((error) => error.path?.[0])).toEqual(['b']);
  });
});

describe('upstream call budget of a batch', () => {
  const h = useHarness({
    config: { maxUpstreamCalls: 2, limits: { batchingLimit: 3 } },
  });

  it('shares one budget among the operations of one HTTP request', async () => {
    const response = await h.app.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        [0, 1, 2].map((i) => ({ query: `{ repositories(limit: 1, offset: ${i}) { total } }` })),
      ),
    });
    const results = (await response.json()) as Array<{
      errors?: Array<{ extensions: { code: string } }>;
    }>;
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(2);
    expect(results.flatMap((r) => r.errors ?? []).map((e) => e.extensions.code)).toEqual([
      'UPSTREAM_BUDGET_EXCEEDED',
    ]);
  });
});
