import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { checkCacheIsolation, TENANT } from '../helpers/cache-isolation.js';
import { createHarness, postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';

// Every run generates the same values: the seed is pinned for the run (test/helpers/fast-check-seed.ts).
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: inject('fcSeed') });

const LIST = '{ repositories(limit: 3) { items { id } } }';
const REPO_ROUTE = 'GET /git/v1/repo';
type Ids = { repositories: { items: Array<{ id: string }> } };
const ids = (answer: { data?: Ids | null }) =>
  answer.data?.repositories.items.map((item) => item.id);

describe('response cache isolation', () => {
  const h = useHarness({
    sandbox: { repositoryCacheControl: 'max-age=60', repositoryVaryHeader: TENANT },
    config: { forwardHeaders: [TENANT] },
  });

  it("never serves a caller an answer made for another's credential or forwarded headers", async () => {
    const hits = await checkCacheIsolation({
      cached: () => h.createApp(),
      uncached: h.createApp({ config: { responseCache: { enabled: false, maxBytes: 0 } } }),
      numRuns: 25,
    });
    expect(hits).toBeGreaterThan(0);
  });

  it('never serves one client token the answer kept for another in service-key mode', async () => {
    const serviceKey = {
      upstream: { apiKey: 'service-key' },
      clientTokens: ['alice', 'bob', 'carol'],
    };
    const hits = await checkCacheIsolation({
      cached: () => h.createApp({ config: serviceKey }),
      uncached: h.createApp({
        config: { ...serviceKey, responseCache: { enabled: false, maxBytes: 0 } },
      }),
      numRuns: 25,
    });
    expect(hits).toBeGreaterThan(0);
  });
});

describe('response cache poisoning', () => {
  it('serves no answer shaped by a header the facade does not forward', async () => {
    const h = await createHarness({
      sandbox: { repositoryCacheControl: 'max-age=60', repositoryVaryHeader: TENANT },
    });
    try {
      const app = h.createApp();
      const evil = await postGraphQL<Ids>(app, LIST, undefined, { [TENANT]: 'evil' });
      const plain = await postGraphQL<Ids>(app, LIST, undefined, {});
      // The header never reached the upstream: the one answer kept is the account's own list.
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)[0]?.headers[TENANT]).toBeUndefined();
      const direct = await fetch(`${h.sandbox.url}/git/v1/repo?limit=3`);
      const own = ((await direct.json()) as { repositories: Array<{ id: string }> }).repositories;
      expect(ids(evil)).toEqual(own.map((repository) => repository.id));
      expect(ids(plain)).toEqual(ids(evil));
    } finally {
      await h.close();
    }
  });

  it('keeps nothing that varies on a header outside the key, such as the request id', async () => {
    const h = await createHarness({
      sandbox: { repositoryCacheControl: 'max-age=60', repositoryVaryHeader: 'x-request-id' },
    });
    try {
      const app = h.createApp();
      const first = await postGraphQL<Ids>(app, LIST, undefined, { 'x-request-id': 'poison' });
      const second = await postGraphQL<Ids>(app, LIST, undefined, { 'x-request-id': 'victim' });
      expect(ids(second)).not.toEqual(ids(first));
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(2);
      expect(first.headers.get('cache-control')).toBe('private, no-store');
    } finally {
      await h.close();
    }
  });
});
