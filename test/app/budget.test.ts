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
    // A fresh app has not seen the upstream's page cap: it plans one call, learns the cap from
    // the short answer, and finds the other two would not fit.
    const fresh = await createHarness({
      sandbox: { repositories: 60, maxPageSize: 10 },
      config: { maxUpstreamCalls: 2 },
    });
    try {
      const first = await fresh.gql('{ repositories(limit: 25) { items { id } } }');
      expect(first.errors?.[0]?.extensions.code).toBe('UPSTREAM_BUDGET_EXCEEDED');
      expect(first.errors?.[0]?.path).toEqual(['repositories']);
      expect(upstreamRequests(fresh.sandbox, ROUTE)).toHaveLength(1);

      // Now the cap is known: the three calls are planned up front and refused with none spent.
      fresh.sandbox.clearRequests();
      const second = await fresh.gql('{ repositories(limit: 25) { items { id } } }');
      expect(second.errors?.[0]?.extensions.code).toBe('UPSTREAM_BUDGET_EXCEEDED');
      expect(upstreamRequests(fresh.sandbox, ROUTE)).toHaveLength(0);

      // Within the budget, the same page is filled in full.
      const roomy = fresh.createApp({ config: { maxUpstreamCalls: 3 } });
      const third = await postGraphQL<{ repositories: Page }>(
        roomy,
        '{ repositories(limit: 25) { items { id } } }',
      );
      expect(third.errors).toBeUndefined();
      expect(third.data?.repositories?.items).toHaveLength(25);
      expect(upstreamRequests(fresh.sandbox, ROUTE)).toHaveLength(3);
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
