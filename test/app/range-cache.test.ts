import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { TENANT } from '../helpers/cache-isolation.js';
import { createHarness, postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';

// Every run generates the same values: the seed is pinned for the run (test/helpers/fast-check-seed.ts).
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: inject('fcSeed') });

const REPO_ROUTE = 'GET /git/v1/repo';
const as = (token: string) => ({ authorization: `Bearer ${token}` });

type Page = { repositories: { total: number; offset: number; items: Array<{ id: string }> } };
type Shown = {
  upstreamCalls?: { calls: unknown[]; cache?: string; cachedRanges?: Array<{ maxAge: number }> };
};

let documents = 0;
/** A page query in a document of its own, so that the response cache never answers it. */
const page = (limit: number, offset: number) =>
  `query Page${++documents} { repositories(limit: ${limit}, offset: ${offset}) { total offset items { id } } }`;

const calls = (sandbox: Parameters<typeof upstreamRequests>[0]) =>
  upstreamRequests(sandbox, REPO_ROUTE).length;

const maxAge = (headers: Headers) =>
  Number(/max-age=(\d+)/.exec(headers.get('cache-control') ?? '')?.[1] ?? Number.NaN);

describe('range cache', () => {
  describe('with the upstream sending max-age=30 on the repository list', () => {
    const h = useHarness({ sandbox: { repositoryCacheControl: 'max-age=30' } });

    it('answers a page a kept range covers with no upstream call, as a direct call would', async () => {
      const app = h.createApp();
      const wide = await postGraphQL<Page>(app, page(40, 0), undefined, as('alice'));
      expect(wide.errors).toBeUndefined();
      expect(calls(h.sandbox)).toBe(1);

      const inner = await postGraphQL<Page>(app, page(20, 10), undefined, as('alice'));
      expect(inner.errors).toBeUndefined();
      expect(calls(h.sandbox)).toBe(1);
      const shown = inner.extensions as Shown;
      expect(shown.upstreamCalls?.calls).toEqual([]);
      expect(shown.upstreamCalls?.cachedRanges).toHaveLength(1);
      expect(inner.headers.get('cache-control')).toMatch(/^private, max-age=\d+$/);
      expect(maxAge(inner.headers)).toBeLessThanOrEqual(30);

      const uncached = h.createApp({ config: { responseCache: { enabled: false, maxBytes: 0 } } });
      const direct = await postGraphQL<Page>(uncached, page(20, 10), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(2);
      expect(inner.data).toEqual(direct.data);
      expect(inner.data?.repositories.items).toEqual(wide.data?.repositories.items.slice(10, 30));
    });

    it('serves a kept range to its own token only: another token makes its own call', async () => {
      const app = h.createApp();
      await postGraphQL(app, page(40, 0), undefined, as('alice'));
      await postGraphQL(app, page(20, 10), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(1);
      const bob = await postGraphQL<Page>(app, page(20, 10), undefined, as('bob'));
      expect(calls(h.sandbox)).toBe(2);
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)[1]?.headers.authorization).toBe('Bearer bob');
      const uncached = h.createApp({ config: { responseCache: { enabled: false, maxBytes: 0 } } });
      const direct = await postGraphQL<Page>(uncached, page(20, 10), undefined, as('bob'));
      expect(bob.data).toEqual(direct.data);
    });

    it('fetches a range that reaches past the kept one, then answers from both', async () => {
      const app = h.createApp();
      await postGraphQL(app, page(20, 0), undefined, as('alice'));
      await postGraphQL(app, page(20, 30), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(2);
      // [10, 30) lies past the first range's end: it is fetched whole.
      await postGraphQL(app, page(20, 10), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(3);
      // [0, 50) is now covered by the three kept ranges together.
      const all = await postGraphQL<Page>(app, page(50, 0), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(3);
      expect(all.data?.repositories.items).toHaveLength(50);
      expect(new Set(all.data?.repositories.items.map((item) => item.id)).size).toBe(50);
    });

    it('answers repositoriesConnection from a kept range too', async () => {
      const app = h.createApp();
      const wide = await postGraphQL<Page>(app, page(40, 0), undefined, as('alice'));
      const connection = await postGraphQL<{
        repositoriesConnection: { totalCount: number; edges: Array<{ node: { id: string } }> };
      }>(
        app,
        '{ repositoriesConnection(first: 10) { totalCount edges { node { id } } } }',
        undefined,
        as('alice'),
      );
      expect(connection.errors).toBeUndefined();
      expect(calls(h.sandbox)).toBe(1);
      expect(connection.data?.repositoriesConnection.edges.map((edge) => edge.node.id)).toEqual(
        wide.data?.repositories.items.slice(0, 10).map((item) => item.id),
      );
      expect(connection.data?.repositoriesConnection.totalCount).toBe(
        wide.data?.repositories.total,
      );
    });

    it("forgets a caller's ranges after its mutation, and only that caller's", async () => {
      const app = h.createApp();
      await postGraphQL(app, page(40, 0), undefined, as('alice'));
      await postGraphQL(app, page(40, 0), undefined, as('bob'));
      await postGraphQL(app, page(10, 0), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(2);
      const mutation = await postGraphQL(
        app,
        'mutation { createDomainVerification(input: { domain: "example.com" }) { domain } }',
        undefined,
        as('alice'),
      );
      expect(mutation.errors).toBeUndefined();
      await postGraphQL(app, page(10, 0), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(3);
      await postGraphQL(app, page(10, 0), undefined, as('bob'));
      expect(calls(h.sandbox)).toBe(3);
    });

    it('keeps nothing with RESPONSE_CACHE=false, where the same app with it on does', async () => {
      const on = h.createApp();
      await postGraphQL(on, page(40, 0), undefined, as('alice'));
      await postGraphQL(on, page(20, 10), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(1);
      const off = h.createApp({ config: { responseCache: { enabled: false, maxBytes: 0 } } });
      await postGraphQL(off, page(40, 0), undefined, as('alice'));
      await postGraphQL(off, page(20, 10), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(3);
    });
  });

  it('serves a range for what its lifetime has left, then fetches it again', async () => {
    const h = await createHarness({ sandbox: { repositoryCacheControl: 'max-age=3' } });
    try {
      const app = h.createApp();
      const first = await postGraphQL(app, page(40, 0), undefined, as('alice'));
      expect(first.headers.get('cache-control')).toBe('private, max-age=3');
      // Served from the range with the lifetime it has left, never more, while it lasts.
      await expect
        .poll(
          async () => {
            const inner = await postGraphQL(app, page(20, 10), undefined, as('alice'));
            return { calls: calls(h.sandbox), maxAge: maxAge(inner.headers) };
          },
          { interval: 50, timeout: 5000 },
        )
        .toEqual({ calls: 1, maxAge: 1 });
      // Then past it: fetched again.
      await expect
        .poll(
          async () => {
            await postGraphQL(app, page(20, 10), undefined, as('alice'));
            return calls(h.sandbox);
          },
          { interval: 50, timeout: 5000 },
        )
        .toBe(2);
    } finally {
      await h.close();
    }
  });

  it('keeps nothing without a policy, and a range under UPSTREAM_CACHE_MAX_AGE', async () => {
    const h = await createHarness();
    try {
      const app = h.createApp();
      await postGraphQL(app, page(40, 0), undefined, as('alice'));
      const inner = await postGraphQL(app, page(20, 10), undefined, as('alice'));
      expect(calls(h.sandbox)).toBe(2);
      expect(inner.headers.get('cache-control')).toBe('private, no-store');
    } finally {
      await h.close();
    }
    const configured = await createHarness({
      config: { upstream: { cacheMaxAge: { '/git/v1/repo': 30 } } },
    });
    try {
      await configured.gql(page(40, 0), undefined, as('alice'));
      await configured.gql(page(20, 10), undefined, as('alice'));
      expect(calls(configured.sandbox)).toBe(1);
    } finally {
      await configured.close();
    }
  });

  describe('isolation', () => {
    const h = useHarness({
      sandbox: { repositoryCacheControl: 'max-age=60', repositoryVaryHeader: TENANT },
      config: { forwardHeaders: [TENANT] },
    });

    it("never serves a caller items of another caller's kept ranges", async () => {
      const uncached = h.createApp({ config: { responseCache: { enabled: false, maxBytes: 0 } } });
      const caller = fc.record({
        token: fc.constantFrom('alice', 'bob'),
        tenant: fc.option(fc.constantFrom('t1', 't2', ''), { nil: undefined }),
        // Not forwarded: it never reaches the upstream, so it must make no difference either way.
        other: fc.option(fc.constantFrom('x', 'y'), { nil: undefined }),
      });
      const request = fc.record({
        who: caller,
        mutation: fc.integer({ min: 0, max: 6 }).map((n) => n === 0),
        limit: fc.integer({ min: 1, max: 12 }),
        offset: fc.integer({ min: 0, max: 48 }),
      });
      let hits = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(request, { minLength: 2, maxLength: 14 }), async (requests) => {
          const app = h.createApp();
          for (const { who, mutation, limit, offset } of requests) {
            const headers: Record<string, string> = { ...as(who.token) };
            if (who.tenant !== undefined) headers[TENANT] = who.tenant;
            if (who.other !== undefined) headers['x-other'] = who.other;
            const query = mutation
              ? 'mutation { createDomainVerification(input: { domain: "example.com" }) { domain } }'
              : page(limit, offset);
            const answer = await postGraphQL<Page>(app, query, undefined, headers);
            const oracle = await postGraphQL<Page>(uncached, query, undefined, headers);
            expect(answer.data).toEqual(oracle.data);
            if ((answer.extensions as Shown | undefined)?.upstreamCalls?.cachedRanges) hits++;
          }
        }),
        { numRuns: 30 },
      );
      expect(hits).toBeGreaterThan(0);
    });
  });
});
