import { buildSchema, OperationTypeNode, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { cacheControlHint, operationPolicy, staticHint } from '../../src/cache/hints.js';
import { loadConfig } from '../../src/config/load.js';
import {
  aged,
  NO_STORE,
  parseCachePolicy,
  privateMaxAge,
  readsPolicy,
  staleWindow,
  strictest,
  withStale,
} from '../../src/upstream/cache-policy.js';
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
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', vary: '*' }, NOW, () => true)).toEqual(
      NO_STORE,
    );
  });

  it('takes off the Age the answer already has, and keeps nothing for Vary: *', () => {
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', age: '12' }, NOW)?.maxAge).toBe(18);
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', age: '40' }, NOW)?.maxAge).toBe(0);
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', vary: 'Accept, *' }, NOW)).toEqual(
      NO_STORE,
    );
  });

  it('reads a header undici gives as several values as one list', () => {
    expect(
      parseCachePolicy({ 'cache-control': ['private', 'max-age=30'], age: ['5'] }, NOW),
    ).toEqual({ maxAge: 25, scope: 'PRIVATE' });
    const expires = [new Date(NOW + 45_000).toUTCString()];
    const date = [new Date(NOW).toUTCString()];
    expect(parseCachePolicy({ expires, date }, NOW + 3_600_000)).toEqual({
      maxAge: 45,
      scope: 'PUBLIC',
    });
    expect(
      parseCachePolicy({ 'cache-control': 'max-age=30', vary: ['Accept-Language'] }, NOW),
    ).toEqual(NO_STORE);
  });

  it('reads directives whatever their spacing, and skips empty ones', () => {
    expect(parseCachePolicy({ 'cache-control': ' , Max-Age = 30 ,, PRIVATE ' }, NOW)).toEqual({
      maxAge: 30,
      scope: 'PRIVATE',
    });
    expect(parseCachePolicy({ 'cache-control': 'max-age="30' }, NOW)).toBeUndefined();
    expect(parseCachePolicy({ 'cache-control': 'max-age=' }, NOW)).toBeUndefined();
  });

  it('takes quotes off a value only where they wrap it whole', () => {
    expect(parseCachePolicy({ 'cache-control': 'max-age=1"2"' }, NOW)).toBeUndefined();
    expect(parseCachePolicy({ 'cache-control': 'max-age="1"2' }, NOW)).toBeUndefined();
  });

  it('keeps nothing private that only a shared cache may keep, whatever stale window it names', () => {
    expect(
      parseCachePolicy({ 'cache-control': 'private, s-maxage=600, stale-if-error=60' }, NOW),
    ).toEqual(NO_STORE);
  });

  it('takes only whole, plain numbers of seconds, and bounds them', () => {
    for (const value of ['30s', 'x30', '-30', '3.5', '1e3']) {
      expect(parseCachePolicy({ 'cache-control': `max-age=${value}` }, NOW)).toBeUndefined();
    }
    expect(parseCachePolicy({ 'cache-control': 'max-age=99999999999' }, NOW)?.maxAge).toBe(
      2 ** 31 - 1,
    );
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', age: '5s' }, NOW)?.maxAge).toBe(30);
  });

  it('ignores an empty name in Vary, and keeps nothing that varies when no header is keyed', () => {
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', vary: ', ' }, NOW)).toEqual({
      maxAge: 30,
      scope: 'PUBLIC',
    });
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', vary: 'Authorization' }, NOW)).toEqual(
      NO_STORE,
    );
  });

  it('takes an Expires already passed as no lifetime, and one with no Date against now', () => {
    const expires = new Date(NOW - 45_000).toUTCString();
    expect(parseCachePolicy({ expires, date: new Date(NOW).toUTCString() }, NOW)).toEqual({
      maxAge: 0,
      scope: 'PUBLIC',
    });
    const later = new Date(NOW + 45_500).toUTCString();
    expect(parseCachePolicy({ expires: later, date: 'not a date' }, NOW)).toEqual({
      maxAge: 45,
      scope: 'PUBLIC',
    });
    expect(parseCachePolicy({ 'cache-control': 'private', expires: later }, NOW)).toEqual({
      maxAge: 45,
      scope: 'PRIVATE',
    });
  });

  it('bounds a far-future Expires as it bounds max-age', () => {
    const farthest = new Date(8.64e15).toUTCString();
    expect(parseCachePolicy({ expires: farthest, date: new Date(NOW).toUTCString() }, NOW)).toEqual(
      { maxAge: 2 ** 31 - 1, scope: 'PUBLIC' },
    );
  });

  // RFC 9111 section 5.1: of an Age sent as a list, the first member counts.
  it('takes the first Age of several, on several lines or one', () => {
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', age: ['5', '7'] }, NOW)?.maxAge).toBe(
      25,
    );
    expect(parseCachePolicy({ 'cache-control': 'max-age=30', age: '12, 3' }, NOW)?.maxAge).toBe(18);
  });

  it('takes the Age off both lifetimes, never below 0', () => {
    expect(
      parseCachePolicy({ 'cache-control': 'max-age=30, s-maxage=60', age: '40' }, NOW),
    ).toEqual({ maxAge: 20, privateMaxAge: 0, scope: 'PUBLIC' });
  });

  it('makes the stricter of two policies', () => {
    expect(strictest({ maxAge: 30, scope: 'PUBLIC' }, { maxAge: 10, scope: 'PRIVATE' })).toEqual({
      maxAge: 10,
      scope: 'PRIVATE',
    });
    expect(strictest({ maxAge: 30, scope: 'PUBLIC' }, NO_STORE)).toEqual(NO_STORE);
  });
});

describe('strictest', () => {
  it('keeps nothing when either keeps nothing', () => {
    const thirty = { maxAge: 30, scope: 'PUBLIC' as const, staleIfError: 60 };
    expect(strictest({ maxAge: 0, scope: 'PUBLIC' }, thirty)).toBe(NO_STORE);
    expect(strictest(thirty, { maxAge: 0, scope: 'PUBLIC' })).toBe(NO_STORE);
  });

  it("is private if either is, and keeps the browsers' shorter lifetime", () => {
    const shared = { maxAge: 60, privateMaxAge: 5, scope: 'PUBLIC' as const };
    const mine = { maxAge: 30, scope: 'PRIVATE' as const };
    expect(strictest(shared, mine)).toEqual({ maxAge: 30, privateMaxAge: 5, scope: 'PRIVATE' });
    expect(strictest(mine, shared)).toEqual({ maxAge: 30, privateMaxAge: 5, scope: 'PRIVATE' });
    expect(strictest({ maxAge: 10, scope: 'PUBLIC' }, shared)).toEqual({
      maxAge: 10,
      privateMaxAge: 5,
      scope: 'PUBLIC',
    });
    expect(strictest({ maxAge: 3, scope: 'PUBLIC' }, shared)).toEqual({
      maxAge: 3,
      privateMaxAge: 3,
      scope: 'PUBLIC',
    });
  });

  it('keeps the shorter of the stale windows both name', () => {
    const a = { maxAge: 10, scope: 'PUBLIC' as const, staleWhileRevalidate: 5, staleIfError: 50 };
    const b = { maxAge: 20, scope: 'PUBLIC' as const, staleWhileRevalidate: 7, staleIfError: 40 };
    expect(strictest(a, b)).toEqual({
      maxAge: 10,
      scope: 'PUBLIC',
      staleWhileRevalidate: 5,
      staleIfError: 40,
    });
  });
});

describe('withStale', () => {
  it('adds no window of 0, and leaves a policy alone without defaults', () => {
    const policy = { maxAge: 5, scope: 'PUBLIC' as const };
    expect(withStale(policy, { staleWhileRevalidate: 0, staleIfError: 0 })).toEqual(policy);
    expect(withStale(policy, undefined)).toBe(policy);
    expect(withStale(policy, { staleWhileRevalidate: 30 })).toEqual({
      ...policy,
      staleWhileRevalidate: 30,
    });
  });
});

describe('staleWindow', () => {
  it('is the longer of the two windows, 0 without either', () => {
    expect(staleWindow({ maxAge: 1, scope: 'PUBLIC' })).toBe(0);
    expect(staleWindow({ maxAge: 1, scope: 'PUBLIC', staleWhileRevalidate: 30 })).toBe(30);
    expect(staleWindow({ maxAge: 1, scope: 'PUBLIC', staleIfError: 60 })).toBe(60);
    expect(
      staleWindow({ maxAge: 1, scope: 'PUBLIC', staleWhileRevalidate: 90, staleIfError: 60 }),
    ).toBe(90);
  });
});

describe('aged', () => {
  it('takes the whole seconds kept off both lifetimes, the private one never below 0', () => {
    const policy = { maxAge: 60, privateMaxAge: 10, scope: 'PUBLIC' as const };
    expect(aged(policy, 12_500)).toEqual({ maxAge: 47, privateMaxAge: 0, scope: 'PUBLIC' });
    expect(aged(policy, 4_500)).toEqual({ maxAge: 55, privateMaxAge: 5, scope: 'PUBLIC' });
    expect(privateMaxAge(aged(policy, 4_500))).toBe(5);
    expect(aged({ maxAge: 60, scope: 'PRIVATE' }, 70_000)).toEqual({
      maxAge: -10,
      scope: 'PRIVATE',
    });
  });

  it('counts a clock that went back as no time kept', () => {
    expect(aged({ maxAge: 60, privateMaxAge: 10, scope: 'PUBLIC' }, -5_000)).toEqual({
      maxAge: 60,
      privateMaxAge: 10,
      scope: 'PUBLIC',
    });
  });
});

describe('privateMaxAge', () => {
  it('is the shared lifetime where the upstream gave browsers none of their own', () => {
    expect(privateMaxAge({ maxAge: 30, scope: 'PUBLIC' })).toBe(30);
    expect(privateMaxAge({ maxAge: 30, privateMaxAge: 0, scope: 'PUBLIC' })).toBe(0);
  });
});

describe('readsPolicy', () => {
  const thirty = { maxAge: 30, scope: 'PUBLIC' as const };
  const read = (outcome: number | string, cachePolicy?: typeof thirty) => ({
    outcome,
    cachePolicy,
  });

  it('reads only the attempts that succeeded with a 2xx', () => {
    for (const outcome of [199, 300, 304, 503, 'timeout']) {
      expect(readsPolicy([read(outcome), read(outcome, thirty)])).toEqual({
        policy: undefined,
        unpoliced: false,
      });
    }
    expect(readsPolicy([read(200, thirty), read(299)])).toEqual({
      policy: thirty,
      unpoliced: true,
    });
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

  it('is no longer than what the kept ranges it read have left', () => {
    const cached = [{ policy: { maxAge: 12, scope: 'PUBLIC' as const } }];
    expect(operationPolicy({ ...query, calls: [call(200, thirty)], cached })).toEqual({
      maxAge: 12,
      scope: 'PUBLIC',
    });
    expect(operationPolicy({ ...query, calls: [], cached })).toEqual(cached[0]?.policy);
  });

  it('lets a static hint stand for the reads beneath it, and the strictest wins', () => {
    const hint = { maxAge: 60, scope: 'PUBLIC' as const };
    expect(operationPolicy({ ...query, hint, calls: [] })).toEqual(hint);
    expect(operationPolicy({ ...query, hint, calls: [call(200)] })).toEqual(hint);
    expect(operationPolicy({ ...query, hint, calls: [call(200, thirty)] })).toEqual(thirty);
  });
});

describe('cacheControlHint', () => {
  const directive = (args: Array<[string, { kind: string; value?: string }]>) => ({
    name: { value: 'cacheControl' },
    arguments: args.map(([name, value]) => ({ name: { value: name }, value })),
  });

  it('reads the directive from the SDL, ignoring values of other kinds', () => {
    const hint = (...args: Array<[string, { kind: string; value?: string }]>) =>
      cacheControlHint({ astNode: { directives: [directive(args)] } });
    expect(hint(['maxAge', { kind: 'IntValue', value: '60' }])).toEqual({
      maxAge: 60,
      scope: 'PUBLIC',
    });
    expect(
      hint(
        ['maxAge', { kind: 'IntValue', value: '60' }],
        ['scope', { kind: 'StringValue', value: 'PRIVATE' }],
      ),
    ).toEqual({ maxAge: 60, scope: 'PUBLIC' });
    expect(
      hint(
        ['maxAge', { kind: 'StringValue', value: '60' }],
        ['scope', { kind: 'EnumValue', value: 'PRIVATE' }],
      ),
    ).toEqual({ maxAge: 0, scope: 'PRIVATE' });
    expect(
      cacheControlHint({ astNode: { directives: [{ name: { value: 'cacheControl' } }] } }),
    ).toEqual({ maxAge: 0, scope: 'PUBLIC' });
  });

  it('reads only @cacheControl among other directives, and nothing without one', () => {
    const other = { name: { value: 'deprecated' }, arguments: [] };
    expect(
      cacheControlHint({
        astNode: { directives: [other, directive([['maxAge', { kind: 'IntValue', value: '9' }]])] },
      }),
    ).toEqual({ maxAge: 9, scope: 'PUBLIC' });
    expect(cacheControlHint({ astNode: { directives: [other] } })).toBeUndefined();
    expect(cacheControlHint({ astNode: {} })).toBeUndefined();
    expect(cacheControlHint({})).toBeUndefined();
  });

  it("reads the directive from Pothos's extensions, as a list or by name", () => {
    const args = { maxAge: 60, scope: 'PRIVATE' };
    const expected = { maxAge: 60, scope: 'PRIVATE' };
    expect(
      cacheControlHint({
        extensions: {
          directives: [
            { name: 'key', args: {} },
            { name: 'cacheControl', args },
          ],
        },
      }),
    ).toEqual(expected);
    expect(cacheControlHint({ extensions: { directives: [{ name: 'key', args: {} }] } })).toBe(
      undefined,
    );
    expect(cacheControlHint({ extensions: { directives: { cacheControl: args } } })).toEqual(
      expected,
    );
    expect(cacheControlHint({ extensions: { directives: { cacheControl: [args] } } })).toEqual(
      expected,
    );
    expect(cacheControlHint({ extensions: { directives: { key: {} } } })).toBeUndefined();
    expect(cacheControlHint({ extensions: { directives: null } })).toBeUndefined();
    expect(cacheControlHint({ extensions: {} })).toBeUndefined();
  });

  it('takes a maxAge that is not a positive number as 0, and whole seconds of the rest', () => {
    const hint = (maxAge: unknown) =>
      cacheControlHint({ extensions: { directives: { cacheControl: { maxAge } } } });
    expect(hint(60.9)).toEqual({ maxAge: 60, scope: 'PUBLIC' });
    expect(hint(-5)).toEqual({ maxAge: 0, scope: 'PUBLIC' });
    expect(hint('60')).toEqual({ maxAge: 0, scope: 'PUBLIC' });
    expect(hint(undefined)).toEqual({ maxAge: 0, scope: 'PUBLIC' });
    expect(
      cacheControlHint({
        astNode: { directives: [directive([['maxAge', { kind: 'IntValue', value: '-0' }]])] },
      }),
    ).toEqual({ maxAge: 0, scope: 'PUBLIC' });
  });
});

describe('staticHint', () => {
  const schema = buildSchema(`
    enum CacheControlScope { PUBLIC PRIVATE }
    directive @cacheControl(maxAge: Int, scope: CacheControlScope) on FIELD_DEFINITION | OBJECT | SCALAR
    scalar Stamp @cacheControl(maxAge: 5)
    type Query {
      stamp: Stamp
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

  it('computes a document once, hint or none', () => {
    const slow = parse('{ slow { name } }');
    expect(staticHint(schema, slow)).toBe(staticHint(schema, slow));
    const plain = parse('{ plain }');
    staticHint(schema, plain);
    expect(staticHint(schema, plain)).toBeUndefined();
  });

  it('skips a field the schema does not have, and the scalars and enums fields return', () => {
    expect(staticHint(schema, parse('{ nowhere slow { name } }'))).toEqual({
      maxAge: 30,
      scope: 'PUBLIC',
    });
    expect(staticHint(schema, parse('{ stamp }'))).toBeUndefined();
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
