// RFC 5861 on the kept ranges: stale-while-revalidate answers at once and refreshes in the
// background; stale-if-error answers a read whose upstream call failed, for the same caller only.
import { describe, expect, it } from 'vitest';
import { upstreamRequests, useHarness } from '../helpers/harness.js';

const LIST = '{ repositories(limit: 20) { total items { id } } }';
const ROUTE = 'GET /git/v1/repo';
const as = (token: string) => ({ authorization: `Bearer ${token}` });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// Past a max-age of 1 s: nothing kept is fresh any more, the response cache's answers included.
const PAST_MAX_AGE_MS = 1_100;

type Answer = { repositories: { total: number; items: Array<{ id: string }> } | null };

describe('stale-while-revalidate', () => {
  const h = useHarness({
    sandbox: { repositoryCacheControl: 'max-age=1, stale-while-revalidate=30' },
  });

  it('answers at once from the kept range past its max-age, and refreshes it with one call', async () => {
    const first = await h.gql<Answer>(LIST, undefined, as('alice'));
    expect(first.errors).toBeUndefined();
    await sleep(PAST_MAX_AGE_MS);
    // The upstream now answers a second late.
    h.sandbox.setFault(ROUTE, { delayMs: 1_000 });
    h.sandbox.clearRequests();

    const started = performance.now();
    const stale = await h.gql<Answer>(LIST, undefined, as('alice'));
    expect(performance.now() - started).toBeLessThan(100);
    expect(stale.errors).toBeUndefined();
    expect(stale.data).toEqual(first.data);
    // Said, not hidden: no further lifetime, and how old it is.
    expect(stale.headers.get('cache-control')).toBe('private, no-store');
    expect(Number(stale.headers.get('age'))).toBeGreaterThanOrEqual(1);
    // Another stale answer meanwhile joins the refresh under way.
    await h.gql(LIST, undefined, as('alice'));

    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
    const [refresh] = upstreamRequests(h.sandbox, ROUTE);
    // For the caller it belongs to: its credential went upstream.
    expect(refresh?.headers.authorization).toBe('Bearer alice');
    await sleep(1_200);
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);

    const metrics = await (await h.app.fetch('http://facade.test/metrics')).text();
    expect(metrics).toMatch(/cache_refreshes_total\{route="GET \/git\/v1\/repo",outcome="ok"\} 1/);
    expect(metrics).toMatch(
      /cache_lookups_total\{route="GET \/git\/v1\/repo",result="stale-while-revalidate"\} [1-9]/,
    );
  });

  it('shows the rule and the age where the upstream calls are shown', async () => {
    await h.gql(LIST, undefined, as('bob'));
    await sleep(PAST_MAX_AGE_MS);
    const stale = await h.gql(LIST, undefined, as('bob'));
    const shown = (stale.extensions as { upstreamCalls?: { cachedRanges?: unknown[] } })
      .upstreamCalls?.cachedRanges;
    expect(shown).toEqual([
      expect.objectContaining({
        maxAge: 0,
        stale: { rule: 'stale-while-revalidate', age: expect.any(Number) },
      }),
    ]);
  });
});

describe('stale-if-error', () => {
  const h = useHarness({
    sandbox: { repositoryCacheControl: 'max-age=1, stale-if-error=60' },
    config: { upstream: { retries: 0, breakerThreshold: 2, breakerCooldownMs: 60_000 } },
  });

  it('answers a failing read from what the same caller kept, and never another caller', async () => {
    const first = await h.gql<Answer>(LIST, undefined, as('carol'));
    expect(first.errors).toBeUndefined();
    await sleep(PAST_MAX_AGE_MS);
    h.sandbox.setFault(ROUTE, { status: 500, body: { message: 'down' } });

    const stale = await h.gql<Answer>(LIST, undefined, as('carol'));
    expect(stale.errors).toBeUndefined();
    expect(stale.data).toEqual(first.data);
    expect(stale.headers.get('cache-control')).toBe('private, no-store');
    expect(stale.headers.get('age')).toMatch(/^\d+$/);

    const other = await h.gql<Answer>(LIST, undefined, as('dave'));
    expect(other.errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');

    // The route's circuit is open now: no call at all, and still the kept data for carol.
    h.sandbox.clearRequests();
    const open = await h.gql<Answer>(LIST, undefined, as('carol'));
    expect(open.errors).toBeUndefined();
    expect(open.data).toEqual(first.data);
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(0);
  });
});

describe('stale-if-error on a 4xx', () => {
  const h = useHarness({
    sandbox: { repositoryCacheControl: 'max-age=1, stale-if-error=60' },
    config: { upstream: { retries: 0 } },
  });

  it.each([
    [404, 'NOT_FOUND'],
    [400, 'BAD_USER_INPUT'],
  ])('never answers a %s stale', async (status, code) => {
    const token = `erin-${status}`;
    await h.gql(LIST, undefined, as(token));
    await sleep(PAST_MAX_AGE_MS);
    h.sandbox.setFault(ROUTE, { status, body: { message: 'no' } });
    const answer = await h.gql(LIST, undefined, as(token));
    expect(answer.errors?.[0]?.extensions.code).toBe(code);
  });
});

describe('without a stale directive', () => {
  const h = useHarness({
    sandbox: { repositoryCacheControl: 'max-age=1' },
    config: { upstream: { retries: 0 } },
  });

  it('answers the error past the max-age, as before', async () => {
    await h.gql(LIST, undefined, as('frank'));
    await sleep(PAST_MAX_AGE_MS);
    h.sandbox.setFault(ROUTE, { status: 503, body: { message: 'down' } });
    const answer = await h.gql(LIST, undefined, as('frank'));
    expect(answer.errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
  });
});

describe("the operator's UPSTREAM_STALE_IF_ERROR", () => {
  const h = useHarness({
    sandbox: { repositoryCacheControl: 'max-age=1' },
    config: { upstream: { retries: 0, staleIfError: { '/git/v1/repo': 60 } } },
  });

  it('applies where the upstream names no stale-if-error', async () => {
    const first = await h.gql<Answer>(LIST, undefined, as('gina'));
    await sleep(PAST_MAX_AGE_MS);
    h.sandbox.setFault(ROUTE, { reset: true });
    const stale = await h.gql<Answer>(LIST, undefined, as('gina'));
    expect(stale.errors).toBeUndefined();
    expect(stale.data).toEqual(first.data);
  });
});
