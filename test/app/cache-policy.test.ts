import { buildSchema, OperationTypeNode, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { operationPolicy, staticHint } from '../../src/cache/hints.js';
import { NO_STORE, parseCachePolicy, strictest, withStale } from '../../src/cache/policy.js';
import { loadConfig } from '../../src/config.js';
import type { CompletedCall } from '../../src/upstream/client.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');

describe('parseCachePolicy', () => {
  it.each([
    ['max-age=30', { maxAge: 30, scope: 'PUBLIC' }],
    ['public, max-age=30', { maxAge: 30, scope: 'PUBLIC' }],
    ['private, max-age=30', { maxAge: 30, scope: 'PRIVATE' }],
    // s-maxage is the facade's own lifetime (a shared cache); browsers keep max-age.
    ['max-age=30, s-maxage=5', { maxAge: 5, privateMaxAge: 30, scope: 'PUBLIC' }],
    ['max-age=0, s-maxage=600', { maxAge: 600, privateMaxAge: 0, scope: 'PUBLIC' }],
    ['s-maxage=600', { maxAge: 600, privateMaxAge: 0, scope: 'PUBLIC' }],
    ['max-age=60, s-maxage=60', { maxAge: 60, scope: 'PUBLIC' }],
    // Kept per caller, as a browser keeps it: s-maxage says nothing of a private answer.
    ['private, max-age=30, s-maxage=600', { maxAge: 30, scope: 'PRIVATE' }],
    ['private, s-maxage=600', NO_STORE],
    // RFC 5861's windows past the max-age.
    [
      'max-age=1, stale-while-revalidate=30, stale-if-error=60',
      { maxAge: 1, scope: 'PUBLIC', staleWhileRevalidate: 30, staleIfError: 60 },
    ],
    ['no-store, stale-if-error=60', NO_STORE],
    ['MAX-AGE="30"', { maxAge: 30, scope: 'PUBLIC' }],
    ['max-age=10, max-age=99', { maxAge: 10, scope: 'PUBLIC' }],
    ['no-store, max-age=30', NO_STORE],
    ['no-cache, max-age=30', NO_STORE],
    ['max-age=0', { maxAge: 0, scope: 'PUBLIC' }],
    ['private', NO_STORE],
  ])('reads Cache-Control: %s', (header, policy) => {
    expect(parseCachePolicy({ 'cache-control': header }, NOW)).toEqual(policy);
  });

  it("fills the stale windows the upstream does not name from the operator's", () => {
    expect(
      withStale(
        { maxAge: 5, scope: 'PUBLIC', staleIfError: 9 },
        { staleIfError: 60, staleWhileRevalidate: 30 },
      ),
    ).toEqual({
      maxAge: 5,
      scope: 'PUBLIC',
      staleWhileRevalidate: 30,
      staleIfError: 9,
    });
    expect(withStale(NO_STORE, { staleIfError: 60 })).toBe(NO_STORE);
  });

  it('keeps a stale window only where every part of an answer has one, the shortest', () => {
    const a = { maxAge: 10, scope: 'PUBLIC' as const, staleWhileRevalidate: 30, staleIfError: 5 };
    const b = { maxAge: 20, scope: 'PUBLIC' as const, staleWhileRevalidate: 10 };
    expect(strictest(a, b)).toEqual({ maxAge: 10, scope: 'PUBLIC', staleWhileRevalidate: 10 });
  });

  it('declares nothing when the upstream says nothing', () => {
    expect(parseCachePolicy({}, NOW)).toBeUndefined();
    expect(parseCachePolicy({ 'cache-control': 'public' }, NOW)).toBeUndefined();
    expect(parseCachePolicy({ 'cache-control': 'max-age=abc' }, NOW)).toBeUndefined();
  });

  it("takes Expires against the answer's Date, and an invalid one as passed", () => {
    const date = new Date(NOW).toUTCString();
    const expires = new Date(NOW + 45_000).toUTCString();
    expect(parseCachePolicy({ expires, date }, NOW + 3_600_000)).toEqual({
      maxAge: 45,
      scope: 'PUBLIC',
    });
    expect(parseCachePolicy({ expires }, NOW)).toEqual({ maxAge: 45, scope: 'PUBLIC' });
    expect(parseCachePolicy({ expires: '0' }, NOW)).toEqual({ maxAge: 0, scope: 'PUBLIC' });
    expect(parseCachePolicy({ 'cache-control': 'max-age=5', expires }, NOW)?.maxAge).toBe(5);
  });

  it('keeps nothing that varies on a header outside the key', () => {
    const keyed = (header: string) => header === 'authorization' || header === 'x-tenant';
    const policy = (vary: string) =>
      parseCachePolicy({ 'cache-control': 'max-age=30', vary }, NOW, keyed);
    expect(policy('Authorization, X-Tenant')).toEqual({ maxAge: 30, scope: 'PUBLIC' });
    expect(policy('X-Request-Id')).toEqual(NO_STORE);
    expect(policy('*')).toEqual(NO_STORE);
  });

  it('takes off the Age the answer already has, and keeps nothing for Vary: *', () => {
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', age: '12' }, NOW)?.maxAge).toBe(18);
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', age: '40' }, NOW)?.maxAge).toBe(0);
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', vary: 'Accept, *' }, NOW)).toEqual(
      NO_STORE,
    );
  });

  it('makes the stricter of two policies', () => {
    expect(strictest({ maxAge: 30, scope: 'PUBLIC' }, { maxAge: 10, scope: 'PRIVATE' })).toEqual({
      maxAge: 10,
      scope: 'PRIVATE',
    });
    expect(strictest({ maxAge: 30, scope: 'PUBLIC' }, NO_STORE)).toEqual(NO_STORE);
  });
});

const call = (outcome: CompletedCall['outcome'], cachePolicy?: CompletedCall['cachePolicy']) =>
  ({
    route: 'GET /git/v1/repo',
    outcome,
    durationMs: 1,
    callId: 1,
    attempt: 1,
    callers: 1,
    cachePolicy,
  }) as CompletedCall;

describe('operationPolicy', () => {
  const query = {
    operation: OperationTypeNode.QUERY,
    hasErrors: false,
    hint: undefined,
    readUnhinted: false,
  };
  const thirty = { maxAge: 30, scope: 'PUBLIC' as const };

  it('is the strictest of the reads, skipping failed attempts that a retry made good', () => {
    expect(operationPolicy({ ...query, calls: [call(503), call(200, thirty)] })).toEqual(thirty);
    expect(
      operationPolicy({
        ...query,
        calls: [call(200, thirty), call(200, { maxAge: 5, scope: 'PRIVATE' })],
      }),
    ).toEqual({ maxAge: 5, scope: 'PRIVATE' });
  });

  it('keeps nothing for a mutation, an error, a read without a policy, or no read at all', () => {
    expect(
      operationPolicy({
        ...query,
        operation: OperationTypeNode.MUTATION,
        calls: [call(200, thirty)],
      }),
    ).toEqual(NO_STORE);
    expect(operationPolicy({ ...query, hasErrors: true, calls: [call(200, thirty)] })).toEqual(
      NO_STORE,
    );
    expect(operationPolicy({ ...query, calls: [call(200, thirty), call(200)] })).toEqual(NO_STORE);
    expect(operationPolicy({ ...query, readUnhinted: true, calls: [call(200, thirty)] })).toEqual(
      NO_STORE,
    );
    expect(operationPolicy({ ...query, calls: [] })).toEqual(NO_STORE);
  });

  it('lets a static hint stand for the reads beneath it, and the strictest wins', () => {
    const hint = { maxAge: 60, scope: 'PUBLIC' as const };
    expect(operationPolicy({ ...query, hint, calls: [] })).toEqual(hint);
    expect(operationPolicy({ ...query, hint, calls: [call(200)] })).toEqual(hint);
    expect(operationPolicy({ ...query, hint, calls: [call(200, thirty)] })).toEqual(thirty);
  });
});

describe('staticHint', () => {
  const schema = buildSchema(`
    enum CacheControlScope { PUBLIC PRIVATE }
    directive @cacheControl(maxAge: Int, scope: CacheControlScope) on FIELD_DEFINITION | OBJECT
    type Query {
      slow: Item @cacheControl(maxAge: 60)
      mine: Item @cacheControl(maxAge: 90, scope: PRIVATE)
      plain: String
    }
    type Item @cacheControl(maxAge: 30) { name: String }
  `);

  it('reads @cacheControl on the selected fields and the types they return', () => {
    expect(staticHint(schema, parse('{ slow { name } }'))).toEqual({ maxAge: 30, scope: 'PUBLIC' });
    expect(staticHint(schema, parse('{ mine { name } }'))).toEqual({
      maxAge: 30,
      scope: 'PRIVATE',
    });
    expect(staticHint(schema, parse('{ plain }'))).toBeUndefined();
  });
});

describe('UPSTREAM_CACHE_MAX_AGE', () => {
  const env = { UPSTREAM_URL: 'http://127.0.0.1:4010' };

  it('reads path=seconds pairs for the upstream reads', () => {
    const config = loadConfig({ ...env, UPSTREAM_CACHE_MAX_AGE: '/git/v1/repo=30' });
    expect(config.upstream.cacheMaxAge).toEqual({ '/git/v1/repo': 30 });
    expect(loadConfig(env).upstream.cacheMaxAge).toEqual({});
  });

  it.each(['/domains/v1/verifications=30', 'git/v1/repo=30', '/git/v1/repo=soon', '/git/v1/repo'])(
    'refuses %s in one line naming the variable',
    (value) => {
      expect(() => loadConfig({ ...env, UPSTREAM_CACHE_MAX_AGE: value })).toThrow(
        /^UPSTREAM_CACHE_MAX_AGE: [^\n]+$/,
      );
    },
  );
});
