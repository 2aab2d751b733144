import { describe, expect, it } from 'vitest';
import { createRateLimiter, type RateLimiter } from '../../src/security/use-rate-limit.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';

const LIST = '{ repositories(limit: 20) { total items { id } } }';
const REPO_ROUTE = 'GET /git/v1/repo';

const as = (token: string) => ({ authorization: `Bearer ${token}` });

describe('response cache', () => {
  describe('with the upstream sending max-age=0, s-maxage=600', () => {
    const h = useHarness({ sandbox: { repositoryCacheControl: 'max-age=0, s-maxage=600' } });

    it('keeps the answer for s-maxage but gives browsers only max-age', async () => {
      const app = h.createApp();
      const first = await postGraphQL(app, LIST, undefined, as('alice'));
      expect(first.headers.get('cache-control')).toBe('private, max-age=0');
      const second = await postGraphQL(app, LIST, undefined, as('alice'));
      expect(second.data).toEqual(first.data);
      expect(second.headers.get('cache-control')).toBe('private, max-age=0');
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);
    });

    it('says s-maxage to shared caches beside the browsers max-age in service-key mode', async () => {
      const app = h.createApp({
        config: { upstream: { apiKey: 'service-key' }, allowAnonymousServiceKey: true },
      });
      const first = await postGraphQL(app, LIST);
      expect(first.headers.get('cache-control')).toBe('public, max-age=0, s-maxage=600');
      const second = await postGraphQL(app, LIST);
      expect(second.headers.get('cache-control')).toMatch(
        /^public, max-age=0, s-maxage=(599|600)$/,
      );
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);
    });
  });

  describe('with the upstream sending max-age=30 on the repository list', () => {
    const h = useHarness({ sandbox: { repositoryCacheControl: 'max-age=30' } });

    it('answers a repeated query from the cache, with no upstream call', async () => {
      const app = h.createApp();
      const first = await postGraphQL(app, LIST, undefined, as('alice'));
      expect(first.errors).toBeUndefined();
      expect(first.headers.get('cache-control')).toBe('private, max-age=30');
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);

      const second = await postGraphQL(app, LIST, undefined, as('alice'));
      expect(second.data).toEqual(first.data);
      expect(second.headers.get('cache-control')).toMatch(/^private, max-age=(29|30)$/);
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);
    });

    it('counts a hit in the operation histogram and the request log like any answer', async () => {
      const lines: Array<Record<string, unknown>> = [];
      const logger = createLogger('info', {
        write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>),
      });
      const app = h.createApp({ logger });
      const named = 'query Repos { repositories(limit: 20) { total items { id } } }';
      // As Apollo Client and urql send it: a hit is named from the request, never parsed.
      const send = () =>
        app.fetch('http://facade.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...as('alice') },
          body: JSON.stringify({ query: named, operationName: 'Repos' }),
        });
      await send();
      await send();
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);
      const metrics = await (await app.fetch('http://facade.test/metrics')).text();
      expect(metrics).toMatch(
        /graphql_envelop_request_duration_count\{operationType="query",operationName="Repos"\} 2/,
      );
      const requests = lines.filter((line) => line.operationName === 'Repos');
      expect(requests.map((line) => [line.operationType, line.responseCache])).toEqual([
        ['query', undefined],
        ['query', 'hit'],
      ]);
    });

    it("makes its own call for the same query with another token, and gets that token's data", async () => {
      const app = h.createApp();
      const alice = await postGraphQL<{ repositories: { items: Array<{ id: string }> } }>(
        app,
        LIST,
        undefined,
        as('alice'),
      );
      const bob = await postGraphQL<{ repositories: { items: Array<{ id: string }> } }>(
        app,
        LIST,
        undefined,
        as('bob'),
      );
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(2);
      expect(bob.data?.repositories.items[0]?.id).not.toBe(alice.data?.repositories.items[0]?.id);
      const sent = upstreamRequests(h.sandbox, REPO_ROUTE).map((r) => r.headers.authorization);
      expect(sent).toEqual(['Bearer alice', 'Bearer bob']);
    });

    it('varies a cacheable answer on Origin, Accept, Authorization and the forwarded headers', async () => {
      const app = h.createApp({ config: { forwardHeaders: ['x-tenant'] } });
      const answer = await postGraphQL(app, LIST, undefined, as('carol'));
      const vary = (answer.headers.get('vary') ?? '').toLowerCase().split(/\s*,\s*/);
      expect(vary).toEqual(
        expect.arrayContaining(['origin', 'accept', 'authorization', 'x-tenant']),
      );
    });

    it('writes a hit as the text it kept, byte for byte, where no calls are shown', async () => {
      const app = h.createApp({ config: { production: true } });
      const post = () =>
        app.fetch('http://facade.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...as('grace') },
          body: JSON.stringify({ query: LIST }),
        });
      const miss = await (await post()).text();
      const hit = await post();
      expect(hit.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await hit.text()).toBe(miss);
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);
    });

    it('shows a miss, then a hit, where the upstream calls are shown', async () => {
      const app = h.createApp();
      const miss = await postGraphQL(app, LIST, undefined, as('dave'));
      expect(miss.extensions?.upstreamCalls).toMatchObject({ cache: 'miss' });
      const hit = await postGraphQL(app, LIST, undefined, as('dave'));
      expect(hit.extensions?.upstreamCalls).toEqual({ calls: [], cache: 'hit' });
    });

    it('keeps nothing and says no-store for a mutation, and evicts its caller', async () => {
      const app = h.createApp();
      await postGraphQL(app, LIST, undefined, as('erin'));
      const mutation = await postGraphQL(
        app,
        'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }',
        undefined,
        as('erin'),
      );
      expect(mutation.headers.get('cache-control')).toBe('private, no-store');
      await postGraphQL(app, LIST, undefined, as('erin'));
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(2);
    });

    it('says no-store when a field without a policy is in the answer', async () => {
      const app = h.createApp();
      const answer = await postGraphQL(
        app,
        '{ repositories(limit: 1) { total } domainDnsCheck(domain: "example.invalid") { host } }',
        undefined,
        as('frank'),
      );
      expect(answer.headers.get('cache-control')).toBe('private, no-store');
    });

    it('says public only when no answer depends on the caller', async () => {
      const app = h.createApp({
        config: { upstream: { apiKey: 'service-key' }, allowAnonymousServiceKey: true },
      });
      const answer = await postGraphQL(app, LIST);
      expect(answer.headers.get('cache-control')).toBe('public, max-age=30');
    });

    it('keeps one session for one client token however its scheme is spelled, in service-key mode', async () => {
      const app = h.createApp({
        config: { upstream: { apiKey: 'service-key' }, clientTokens: ['client-token-1'] },
      });
      const spellings = [
        'Bearer client-token-1',
        'bearer client-token-1',
        'BEARER   client-token-1',
      ];
      expect(
        (await postGraphQL(app, LIST, undefined, { authorization: 'Bearer client-token-1' }))
          .errors,
      ).toBeUndefined();
      for (const authorization of spellings) {
        const hit = await postGraphQL(app, LIST, undefined, { authorization });
        expect(hit.extensions?.upstreamCalls).toMatchObject({ cache: 'hit' });
      }
      // Its mutation, spelled otherwise, forgets what it kept: one session, one eviction.
      await postGraphQL(
        app,
        'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }',
        undefined,
        { authorization: 'bearer \tclient-token-1' },
      );
      const after = await postGraphQL(app, LIST, undefined, {
        authorization: spellings[0] as string,
      });
      expect(after.extensions?.upstreamCalls).toMatchObject({ cache: 'miss' });
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(2);
    });

    it('still refuses a hit past the rate limit, and a cross-site page by the CSRF rule', async () => {
      const rateLimiter = (await createRateLimiter({
        points: 2,
        windowS: 60,
        redisUrl: undefined,
      })) as RateLimiter;
      const app = h.createApp({ rateLimiter });
      expect((await postGraphQL(app, LIST, undefined, as('hank'))).errors).toBeUndefined();
      const hit = await postGraphQL(app, LIST, undefined, as('hank'));
      expect(hit.extensions?.upstreamCalls).toMatchObject({ cache: 'hit' });
      const refused = await postGraphQL(app, LIST, undefined, as('hank'));
      expect(refused.status).toBe(429);

      const page = await app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { origin: 'https://evil.example', 'content-type': 'text/plain' },
        body: JSON.stringify({ query: LIST }),
      });
      expect(page.status).toBeGreaterThanOrEqual(400);
      expect(await page.text()).not.toContain('"items"');
    });

    it('sets the same header on a GET, which HTTP caches keep', async () => {
      const app = h.createApp();
      const url = `http://facade.test/graphql?query=${encodeURIComponent(LIST)}`;
      const get = () => app.fetch(url, { headers: { ...as('ivy'), accept: 'application/json' } });
      const first = await get();
      expect(first.headers.get('cache-control')).toBe('private, max-age=30');
      const second = await get();
      expect(second.headers.get('cache-control')).toMatch(/^private, max-age=(29|30)$/);
      const data = async (response: Response) =>
        ((await response.json()) as { data: unknown }).data;
      expect(await data(second)).toEqual(await data(first));
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);
    });

    it('keeps nothing past RESPONSE_CACHE_BYTES', async () => {
      const app = h.createApp({ config: { responseCache: { enabled: true, maxBytes: 0 } } });
      await postGraphQL(app, LIST, undefined, as('gina'));
      await postGraphQL(app, LIST, undefined, as('gina'));
      // A bound of 0 bytes keeps nothing: both went upstream.
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(2);
    });
  });

  describe('with no hint', () => {
    const h = useHarness();

    it('keeps nothing and says no-store, as without a cache', async () => {
      const app = h.createApp();
      const first = await postGraphQL(app, LIST, undefined, as('alice'));
      const second = await postGraphQL(app, LIST, undefined, as('alice'));
      expect(first.headers.get('cache-control')).toBe('private, no-store');
      expect(second.headers.get('cache-control')).toBe('private, no-store');
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(2);
    });
  });

  describe('with UPSTREAM_CACHE_MAX_AGE set for the repository list', () => {
    const h = useHarness({ config: { upstream: { cacheMaxAge: { '/git/v1/repo': 12 } } } });

    it("keeps an answer for the operator's setting when the upstream says nothing", async () => {
      const first = await h.gql(LIST, undefined, as('bob'));
      await h.gql(LIST, undefined, as('bob'));
      expect(first.headers.get('cache-control')).toBe('private, max-age=12');
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);
    });
  });
});
