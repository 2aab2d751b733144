// RFC 5861 on the kept ranges: stale-while-revalidate answers at once and refreshes in the
// background; stale-if-error answers a read whose upstream call failed, for the same caller only.
import { describe, expect, it } from 'vitest';
import { createRefreshes } from '../../src/read/refresh.js';
import { postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';

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

describe('stale-while-revalidate under @defer', () => {
  const h = useHarness({
    sandbox: { repositoryCacheControl: 'max-age=1, stale-while-revalidate=30' },
  });
  // The page before the first part, the rest deferred: an answer in parts whose range is stale.
  const DEFERRED = `{ repositories(limit: 20) { total ... @defer { items { id } } } }`;

  it('says how old it is, and shows the rule on its last part', async () => {
    await h.gql(LIST, undefined, as('frank'));
    await sleep(PAST_MAX_AGE_MS);
    const response = await h.app.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed', ...as('frank') },
      body: JSON.stringify({ query: DEFERRED }),
    });
    expect(response.headers.get('content-type')).toMatch(/^multipart\/mixed/);
    const body = await response.text();
    expect(response.headers.get('cache-control')).toBe('private, no-store');
    expect(Number(response.headers.get('age'))).toBeGreaterThanOrEqual(1);
    const parts = body
      .split(/\r?\n---/)
      .map((chunk) => chunk.slice(chunk.indexOf('{')).trim())
      .filter((json) => json.startsWith('{'))
      .map(
        (json) =>
          JSON.parse(json) as {
            hasNext?: boolean;
            extensions?: { upstreamCalls?: { cachedRanges?: unknown[] } };
          },
      );
    expect(parts.length).toBeGreaterThan(1);
    const last = parts.at(-1);
    expect(last?.hasNext).toBe(false);
    expect(last?.extensions?.upstreamCalls?.cachedRanges).toEqual([
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

describe('a refresh and the call budget', () => {
  // One item a page: a range of ten is ten calls, a refresh of it ten more.
  const h = useHarness({
    sandbox: {
      repositories: 500,
      maxPageSize: 1,
      repositoryCacheControl: 'max-age=1, stale-while-revalidate=30',
    },
    config: { maxUpstreamCalls: 20, upstream: { retries: 0 } },
  });
  const OFFSETS = [0, 100, 200, 300, 400];
  const page = (offset: number) =>
    `p${offset}: repositories(limit: 10, offset: ${offset}) { items { id } }`;

  async function keptAndStale(token: string) {
    const refreshes = createRefreshes();
    const app = h.createApp({ refreshes });
    for (const offset of OFFSETS) {
      const kept = await postGraphQL(app, `{ ${page(offset)} }`, undefined, as(token));
      expect(kept.errors).toBeUndefined();
    }
    await sleep(PAST_MAX_AGE_MS);
    h.sandbox.clearRequests();
    return { app, refreshes };
  }

  it('takes the refreshes of one request from its MAX_UPSTREAM_CALLS', async () => {
    const { app, refreshes } = await keptAndStale('budget-1');
    const stale = await postGraphQL(
      app,
      `{ ${OFFSETS.map(page).join(' ')} }`,
      undefined,
      as('budget-1'),
    );
    expect(stale.errors).toBeUndefined();
    await expect.poll(() => refreshes.running, { timeout: 10_000 }).toBe(0);
    const calls = upstreamRequests(h.sandbox, ROUTE).length;
    // Two ranges of ten fit in twenty calls; five would be fifty.
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBeLessThanOrEqual(20);
  });

  it("leaves the request's own pages their calls first", async () => {
    const { app, refreshes } = await keptAndStale('budget-2');
    const missed = 'miss: repositories(limit: 10, offset: 450) { items { id } }';
    const query = `{ ${OFFSETS.map(page).join(' ')} ${missed} }`;
    const answer = await postGraphQL<{ miss: { items: unknown[] } }>(
      app,
      query,
      undefined,
      as('budget-2'),
    );
    expect(answer.errors).toBeUndefined();
    expect(answer.data?.miss.items).toHaveLength(10);
    await expect.poll(() => refreshes.running, { timeout: 10_000 }).toBe(0);
    expect(upstreamRequests(h.sandbox, ROUTE).length).toBeLessThanOrEqual(20);
  });

  it("refreshes a range with no more calls than the range's pages", async () => {
    const { app, refreshes } = await keptAndStale('budget-3');
    await postGraphQL(app, `{ ${page(0)} }`, undefined, as('budget-3'));
    await expect.poll(() => refreshes.running, { timeout: 10_000 }).toBe(0);
    const offsets = upstreamRequests(h.sandbox, ROUTE).map((r) => r.query.offset ?? '0');
    expect(offsets.sort((a, b) => Number(a) - Number(b))).toEqual(
      Array.from({ length: 10 }, (_, i) => String(i)),
    );
  });
});

describe('a refresh the upstream refuses', () => {
  const h = useHarness({
    sandbox: { repositoryCacheControl: 'max-age=1, stale-while-revalidate=30' },
    config: { upstream: { retries: 0 } },
  });

  it.each([
    [401, 'UNAUTHENTICATED'],
    [403, 'FORBIDDEN'],
  ])(
    'forgets what the caller kept after a %s, so its reads get the verdict',
    async (status, code) => {
      const refreshes = createRefreshes();
      const app = h.createApp({ refreshes });
      const token = `revoked-${status}`;
      expect((await postGraphQL(app, LIST, undefined, as(token))).errors).toBeUndefined();
      await sleep(PAST_MAX_AGE_MS);
      h.sandbox.setFault(ROUTE, { status, body: { message: 'revoked' } });
      const answers = [];
      for (let read = 0; read < 6; read++) {
        answers.push(await postGraphQL(app, LIST, undefined, as(token)));
        await expect.poll(() => refreshes.running).toBe(0);
      }
      // The first read may still answer stale (its refresh learns of the refusal); none after it.
      const codes = answers.slice(1).map((answer) => answer.errors?.[0]?.extensions.code);
      expect(codes).toEqual(Array(5).fill(code));
    },
  );
});
