// The upstream's rate-limit headers passed back to the caller (src/http/use-upstream-headers.ts).
import type { Plugin } from 'graphql-yoga';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { strictestHeaders, useUpstreamHeaders } from '../../src/http/use-upstream-headers.js';
import { type RequestStateCarrier, requestState } from '../../src/request-state.js';
import type { CompletedCall } from '../../src/upstream/client.js';
import {
  MAX_PASSED_BACK_NAMES,
  MAX_PASSED_BACK_VALUE,
  pickHeaders,
  UPSTREAM_LIMIT_HEADERS,
} from '../../src/upstream/response-headers.js';
import { type Harness, upstreamRequests, useHarness } from '../helpers/harness.js';

const LIST_ROUTE = 'GET /git/v1/repo';
const VERIFY_ROUTE = 'PUT /domains/v1/verifications';
const LIST = '{ repositories(limit: 2) { total items { id } } }';
const VERIFY = 'mutation { verifyDomain(input: { domain: "example.com" }) { verified } }';
const APP = 'https://app.example.com';
const OWN_NAME = 'x-quota-left';

/** One attempt of a call, as the client reports it, with the headers it brought. */
function attempt(
  callId: number,
  passedBack: Record<string, string> | undefined,
  attemptNumber = 1,
): CompletedCall {
  return {
    route: LIST_ROUTE,
    outcome: 200,
    durationMs: 1,
    callId,
    attempt: attemptNumber,
    callers: 1,
    passedBack,
  };
}

/** upstream_calls_joined_total for the list route, from the app's /metrics. */
async function joined(h: Harness): Promise<number> {
  const text = await (await h.app.fetch('http://facade.test/metrics')).text();
  const match = /^upstream_calls_joined_total\{route="GET \/git\/v1\/repo"\} (\d+)$/m.exec(text);
  return Number(match?.[1] ?? 0);
}

describe('upstream headers passed back', () => {
  const h = useHarness({
    config: {
      upstream: { retries: 0, breakerThreshold: 0, responseHeaders: [OWN_NAME] },
      corsOrigins: [APP],
      limits: { batchingLimit: 2 },
    },
  });

  it("passes an upstream 429's Retry-After back to the caller", async () => {
    h.sandbox.setFault(LIST_ROUTE, {
      status: 429,
      body: { message: 'slow down' },
      headers: { 'retry-after': '7' },
    });
    const result = await h.gql(LIST);
    expect(result.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 7 });
    expect(result.headers.get('retry-after')).toBe('7');
  });

  it("passes a 200's RateLimit-Remaining back to the caller", async () => {
    h.sandbox.setFault(LIST_ROUTE, {
      headers: { 'RateLimit-Remaining': '7', 'RateLimit-Limit': '100' },
    });
    const result = await h.gql(LIST);
    expect(result.errors).toBeUndefined();
    expect(result.headers.get('ratelimit-remaining')).toBe('7');
    expect(result.headers.get('ratelimit-limit')).toBe('100');
  });

  it('passes nothing back when the upstream states no limit', async () => {
    const result = await h.gql(LIST);
    for (const name of UPSTREAM_LIMIT_HEADERS) expect(result.headers.has(name)).toBe(false);
  });

  it("gives the strictest of a batch's calls", async () => {
    h.sandbox.setFault(LIST_ROUTE, {
      headers: {
        'x-ratelimit-remaining': '7',
        'x-ratelimit-limit': '100',
        'x-ratelimit-reset': '30',
        'retry-after': '2',
      },
    });
    h.sandbox.setFault(VERIFY_ROUTE, {
      headers: {
        'x-ratelimit-remaining': '3',
        'x-ratelimit-limit': '500',
        'x-ratelimit-reset': '60',
        'retry-after': '1',
      },
    });
    const response = await h.app.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ query: LIST }, { query: VERIFY }]),
    });
    expect(await response.json()).toHaveLength(2);
    expect(upstreamRequests(h.sandbox)).toHaveLength(2);
    expect(response.headers.get('x-ratelimit-remaining')).toBe('3');
    expect(response.headers.get('x-ratelimit-limit')).toBe('100');
    expect(response.headers.get('x-ratelimit-reset')).toBe('60');
    expect(response.headers.get('retry-after')).toBe('2');
  });

  it('passes back no header that is not allowed', async () => {
    h.sandbox.setFault(LIST_ROUTE, {
      headers: {
        'x-internal-shard': 'eu-3',
        'set-cookie': 'upstream-session=1',
        'ratelimit-remaining': '5',
      },
    });
    const result = await h.gql(LIST);
    expect(result.headers.get('ratelimit-remaining')).toBe('5');
    expect(result.headers.has('x-internal-shard')).toBe(false);
    expect(result.headers.has('set-cookie')).toBe(false);
  });

  it('passes back a name UPSTREAM_RESPONSE_HEADERS allows', async () => {
    h.sandbox.setFault(LIST_ROUTE, { headers: { 'X-Quota-Left': '12' } });
    const result = await h.gql(LIST);
    expect(result.headers.get(OWN_NAME)).toBe('12');
  });

  it('passes back any RateLimit-* or X-RateLimit-* name, exposed to CORS by name', async () => {
    h.sandbox.setFault(LIST_ROUTE, {
      headers: {
        'x-ratelimit-used': '3',
        'x-ratelimit-resource': 'core',
        'ratelimit-window': '60',
      },
    });
    const result = await h.gql(LIST, undefined, { origin: APP });
    expect(result.headers.get('x-ratelimit-used')).toBe('3');
    expect(result.headers.get('x-ratelimit-resource')).toBe('core');
    expect(result.headers.get('ratelimit-window')).toBe('60');
    const exposed = (result.headers.get('access-control-expose-headers') ?? '').split(/\s*,\s*/);
    expect(exposed).toEqual(
      expect.arrayContaining(['x-ratelimit-used', 'x-ratelimit-resource', 'ratelimit-window']),
    );
  });

  it('passes a name sent on several lines back as its strictest value', async () => {
    h.sandbox.setFault(LIST_ROUTE, {
      headers: { 'ratelimit-remaining': ['5', '0'], 'x-ratelimit-reset': ['30', '60'] },
    });
    const result = await h.gql(LIST);
    expect(result.headers.get('ratelimit-remaining')).toBe('0');
    expect(result.headers.get('x-ratelimit-reset')).toBe('60');
  });

  it('passes back a bounded number of names, the listed ones first', async () => {
    const many = Object.fromEntries(
      Array.from({ length: 400 }, (_, i) => [`x-ratelimit-extra-${i}`, String(i)]),
    );
    h.sandbox.setFault(LIST_ROUTE, { headers: { ...many, 'ratelimit-remaining': '3' } });
    const result = await h.gql(LIST);
    expect(result.errors).toBeUndefined();
    const passed = [...result.headers.keys()].filter((name) => name.includes('ratelimit'));
    expect(passed).toHaveLength(MAX_PASSED_BACK_NAMES);
    expect(result.headers.get('ratelimit-remaining')).toBe('3');
  });

  it('passes back no value longer than the bound', async () => {
    h.sandbox.setFault(LIST_ROUTE, {
      headers: {
        'x-ratelimit-scope': 'a'.repeat(15_000),
        'x-ratelimit-resource': 'b'.repeat(MAX_PASSED_BACK_VALUE),
        'ratelimit-remaining': '3',
      },
    });
    const result = await h.gql(LIST);
    expect(result.errors).toBeUndefined();
    expect(result.headers.has('x-ratelimit-scope')).toBe(false);
    expect(result.headers.get('x-ratelimit-resource')).toHaveLength(MAX_PASSED_BACK_VALUE);
    expect(result.headers.get('ratelimit-remaining')).toBe('3');
  });

  it("lets an allowed origin's pages read them", async () => {
    h.sandbox.setFault(LIST_ROUTE, { headers: { 'ratelimit-remaining': '5' } });
    const result = await h.gql(LIST, undefined, { origin: APP });
    expect(result.headers.get('access-control-allow-origin')).toBe(APP);
    const exposed = (result.headers.get('access-control-expose-headers') ?? '').split(/\s*,\s*/);
    expect(exposed).toEqual(
      expect.arrayContaining([...UPSTREAM_LIMIT_HEADERS, OWN_NAME, 'ratelimit', 'x-request-id']),
    );
  });

  it('passes nothing back, and still answers, when nothing ran', async () => {
    const result = await h.gql('{ repositories(limit: 2) {');
    expect(result.status).toBe(400);
    expect(result.errors?.[0]?.extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    for (const name of UPSTREAM_LIMIT_HEADERS) expect(result.headers.has(name)).toBe(false);
  });

  it('passes a joined call back to every request that waited on it', async () => {
    let open = () => {};
    const held = new Promise<void>((resolve) => {
      open = resolve;
    });
    h.sandbox.setFault(LIST_ROUTE, { until: held, headers: { 'ratelimit-remaining': '4' } });
    const before = await joined(h);
    const answers = Promise.all([h.gql(LIST), h.gql(LIST)]);
    try {
      await expect.poll(() => upstreamRequests(h.sandbox, LIST_ROUTE).length).toBe(1);
      await expect.poll(async () => (await joined(h)) - before).toBe(1);
    } finally {
      open();
    }
    for (const answer of await answers) {
      expect(answer.headers.get('ratelimit-remaining')).toBe('4');
    }
  });
});

describe('upstream headers of a kept answer', () => {
  const h = useHarness({ sandbox: { repositoryCacheControl: 'max-age=30' } });

  it('passes back nothing on a response cache hit, which made no call', async () => {
    h.sandbox.setFault(LIST_ROUTE, { headers: { 'ratelimit-remaining': '9' } });
    const miss = await h.gql(LIST);
    expect(miss.headers.get('ratelimit-remaining')).toBe('9');
    const hit = await h.gql(LIST);
    expect(hit.data).toEqual(miss.data);
    expect(upstreamRequests(h.sandbox, LIST_ROUTE)).toHaveLength(1);
    expect(hit.headers.has('ratelimit-remaining')).toBe(false);
  });
});

describe('strictestHeaders', () => {
  it('takes the longest Retry-After, an HTTP date read as seconds', () => {
    const later = new Date(Date.now() + 120_000).toUTCString();
    const merged = strictestHeaders([
      [attempt(1, { 'retry-after': '30' }), attempt(2, { 'retry-after': later })],
    ]);
    expect(Number(merged?.['retry-after'])).toBeGreaterThanOrEqual(118);
    expect(Number(merged?.['retry-after'])).toBeLessThanOrEqual(120);
    expect(strictestHeaders([[attempt(1, { 'retry-after': 'soon' })]])).toBeUndefined();
  });

  it('takes the least remaining, the lowest limit, the latest reset and the most used', () => {
    const merged = strictestHeaders([
      [
        attempt(1, { 'ratelimit-remaining': '9', 'ratelimit-limit': '50', 'ratelimit-reset': '5' }),
        attempt(2, {
          'ratelimit-remaining': '2',
          'ratelimit-limit': '80',
          'x-ratelimit-used': '3',
        }),
      ],
      [
        attempt(3, {
          'ratelimit-remaining': 'n/a',
          'ratelimit-reset': '40',
          'x-ratelimit-used': '8',
        }),
      ],
    ]);
    expect(merged).toEqual({
      'ratelimit-remaining': '2',
      'ratelimit-limit': '50',
      'ratelimit-reset': '40',
      'x-ratelimit-used': '8',
    });
  });

  it('takes the least limit and remaining, and the latest reset, whichever call comes first', () => {
    const merged = strictestHeaders([
      [
        attempt(1, {
          'x-ratelimit-limit': '80',
          'ratelimit-remaining': '9',
          'ratelimit-reset': '5',
        }),
        attempt(2, {
          'x-ratelimit-limit': '50',
          'ratelimit-remaining': '2',
          'ratelimit-reset': '40',
        }),
      ],
    ]);
    expect(merged).toEqual({
      'x-ratelimit-limit': '50',
      'ratelimit-remaining': '2',
      'ratelimit-reset': '40',
    });
  });

  it('keeps a bounded number of names across calls', () => {
    const calls = Array.from({ length: 3 }, (_, call) =>
      attempt(
        call + 1,
        Object.fromEntries(
          Array.from({ length: 40 }, (_, i) => [`x-ratelimit-c${call}-${i}`, String(i)]),
        ),
      ),
    );
    expect(Object.keys(strictestHeaders([calls]) ?? {})).toHaveLength(MAX_PASSED_BACK_NAMES);
  });

  it('keeps the RateLimit pair within the bound of names, ahead of the names merged last', () => {
    const names = Array.from({ length: MAX_PASSED_BACK_NAMES }, (_, i) => `x-ratelimit-e${i}`);
    const pair = { ratelimit: '"a";r=1;t=1', 'ratelimit-policy': '"a";q=2;w=1' };
    const merged = strictestHeaders([
      [attempt(1, Object.fromEntries(names.map((name) => [name, '1']))), attempt(2, pair)],
    ]);
    expect(Object.keys(merged ?? {})).toEqual([
      ...names.slice(0, MAX_PASSED_BACK_NAMES - 2),
      'ratelimit',
      'ratelimit-policy',
    ]);
    // A pair alone, or beside a few names, keeps everything.
    expect(strictestHeaders([[attempt(1, { ...pair, 'x-ratelimit-e': '1' })]])).toEqual({
      'x-ratelimit-e': '1',
      ...pair,
    });
  });

  it('keeps the first value of a name it has no rule for', () => {
    const merged = strictestHeaders([
      [attempt(1, { [OWN_NAME]: 'eu' }), attempt(2, { [OWN_NAME]: 'us' })],
    ]);
    expect(merged).toEqual({ [OWN_NAME]: 'eu' });
  });

  it('passes RateLimit and RateLimit-Policy together from the call with the least remaining', () => {
    const merged = strictestHeaders([
      [
        attempt(1, { ratelimit: '"day";r=900;t=3600', 'ratelimit-policy': '"day";q=1000;w=86400' }),
        attempt(2, {
          ratelimit: '"burst";r=40;t=1, "day";r=5;t=60',
          'ratelimit-policy': '"burst";q=50;w=1, "day";q=1000;w=86400',
        }),
        attempt(3, { 'ratelimit-policy': '"hour";q=10;w=3600' }),
      ],
    ]);
    expect(merged).toEqual({
      ratelimit: '"burst";r=40;t=1, "day";r=5;t=60',
      'ratelimit-policy': '"burst";q=50;w=1, "day";q=1000;w=86400',
    });
  });

  it('reads the remaining of each RateLimit form: first member, spaced, several digits', () => {
    const pairOf = (...fields: string[]) =>
      strictestHeaders([
        fields.map((ratelimit, i) => attempt(i + 1, { ratelimit, 'ratelimit-policy': `p${i}` })),
      ]);
    // The drafts' form, remaining first.
    expect(pairOf('remaining=3, limit=10', '"b";r=5;t=1')?.['ratelimit-policy']).toBe('p0');
    expect(pairOf('"b";r=5;t=1', '"a"; r=1;t=1')?.['ratelimit-policy']).toBe('p1');
    expect(pairOf('"a";r=12;t=1', '"b";r=5;t=1')?.['ratelimit-policy']).toBe('p1');
    // Of two alike, the first.
    expect(pairOf('"a";r=2;t=1', '"b";r=2;t=1')?.['ratelimit-policy']).toBe('p0');
    // The drafts' form, remaining after a comma without a space.
    expect(pairOf('limit=10,remaining=1', 'remaining=3')?.['ratelimit-policy']).toBe('p0');
    // A parameter of its own whose name ends in r is not r.
    expect(pairOf('"a";r=5;t=1;tier=0', '"b";r=3;t=1')?.['ratelimit-policy']).toBe('p1');
  });

  it('never passes a RateLimit-Policy without the RateLimit of its own call', () => {
    expect(
      strictestHeaders([
        [
          attempt(1, { ratelimit: '"a";r=1;t=1' }),
          attempt(2, { 'ratelimit-policy': '"b";q=5;w=1' }),
        ],
      ]),
    ).toEqual({ ratelimit: '"a";r=1;t=1' });
  });

  it("counts a retried call's last attempt only", () => {
    const merged = strictestHeaders([
      [
        attempt(1, { 'retry-after': '1', 'ratelimit-remaining': '0' }, 1),
        attempt(1, { 'ratelimit-remaining': '99' }, 2),
      ],
    ]);
    expect(merged).toEqual({ 'ratelimit-remaining': '99' });
    expect(
      strictestHeaders([[attempt(1, { 'retry-after': '1' }, 1), attempt(1, undefined, 2)]]),
    ).toBeUndefined();
  });

  it('takes the headers of a call beside one that brought none', () => {
    expect(
      strictestHeaders([[attempt(1, undefined), attempt(2, { 'ratelimit-remaining': '3' })]]),
    ).toEqual({ 'ratelimit-remaining': '3' });
  });

  it('keeps the first of two equal values, however each is spelled', () => {
    const merged = strictestHeaders([
      [
        attempt(1, { 'x-ratelimit-reset': '30', 'ratelimit-remaining': '2' }),
        attempt(2, { 'x-ratelimit-reset': '30.0', 'ratelimit-remaining': '02' }),
      ],
    ]);
    expect(merged).toEqual({ 'x-ratelimit-reset': '30', 'ratelimit-remaining': '2' });
  });

  it('reads a blank value as no number, never as zero', () => {
    const merged = strictestHeaders([
      [
        attempt(1, { 'ratelimit-remaining': '4', 'x-ratelimit-used': '3' }),
        attempt(2, { 'ratelimit-remaining': ' ', 'x-ratelimit-used': '  ' }),
      ],
    ]);
    expect(merged).toEqual({ 'ratelimit-remaining': '4', 'x-ratelimit-used': '3' });
  });

  it('is undefined when no call brought any', () => {
    expect(strictestHeaders([[attempt(1, undefined)], []])).toBeUndefined();
  });
});

describe('useUpstreamHeaders', () => {
  type ResponseArgs = Parameters<NonNullable<Plugin['onResponse']>>[0];

  /** The plugin's onResponse on an answer that already has `own`, after a call that brought `upstream`. */
  function answer(own: Record<string, string>, upstream: Record<string, string>): Headers {
    const request = new Request('http://facade.test/graphql');
    const serverContext: RequestStateCarrier = {};
    requestState(serverContext).upstreamCalls = [[attempt(1, upstream)]];
    const response = new Response('{}', { headers: own });
    useUpstreamHeaders().onResponse?.({ request, response, serverContext } as ResponseArgs);
    return response.headers;
  }

  it("passes the upstream's pair when the facade states none, and exposes exactly what it adds", () => {
    const headers = answer(
      { 'access-control-expose-headers': 'x-request-id' },
      { ratelimit: '"up";r=5;t=1', 'ratelimit-policy': '"up";q=9;w=1', 'x-ratelimit-scope': 'a' },
    );
    expect(headers.get('ratelimit')).toBe('"up";r=5;t=1');
    expect(headers.get('ratelimit-policy')).toBe('"up";q=9;w=1');
    expect(
      headers
        .get('access-control-expose-headers')
        ?.split(/\s*,\s*/)
        .sort(),
    ).toEqual(['ratelimit', 'ratelimit-policy', 'x-ratelimit-scope', 'x-request-id']);
    // Either field of its own keeps the upstream's pair out whole.
    const own = answer({ 'ratelimit-policy': '"facade";q=1;w=1' }, { ratelimit: '"up";r=5;t=1' });
    expect(own.has('ratelimit')).toBe(false);
  });

  it('exposes nothing on an answer that CORS did not expose anything on', () => {
    const headers = answer({}, { 'ratelimit-remaining': '5', 'x-ratelimit-scope': 'a' });
    expect(headers.get('ratelimit-remaining')).toBe('5');
    expect(headers.has('access-control-expose-headers')).toBe(false);
  });

  it("keeps the facade's own limit over the upstream's", () => {
    const headers = answer(
      { ratelimit: '"facade";r=1;t=10', 'retry-after': '10' },
      {
        ratelimit: '"upstream";r=50;t=1',
        'ratelimit-policy': '"upstream";q=100;w=1',
        'retry-after': '3',
        'x-ratelimit-remaining': '50',
      },
    );
    expect(headers.get('ratelimit')).toBe('"facade";r=1;t=10');
    expect(headers.has('ratelimit-policy')).toBe(false);
    expect(headers.get('retry-after')).toBe('10');
    expect(headers.get('x-ratelimit-remaining')).toBe('50');
  });
});

describe('pickHeaders', () => {
  it('keeps the allowed names, a repeated one as one value, and nothing when none came', () => {
    expect(
      pickHeaders(
        {
          'ratelimit-remaining': ['6', '4'],
          'x-ratelimit-limit': '100, 20',
          'x-ratelimit-reset': ['30', '60, 10'],
          'retry-after': ['1', '120'],
          'x-other': '1',
          'x-ratelimit-resource': ['core', 'search'],
          'ratelimit-limit': '10, 10;w=1',
        },
        new Set(UPSTREAM_LIMIT_HEADERS),
      ),
    ).toEqual({
      'ratelimit-remaining': '4',
      'x-ratelimit-limit': '20',
      'x-ratelimit-reset': '60',
      'retry-after': '120',
      'x-ratelimit-resource': 'core, search',
      // A member that is not a number: the list stays as the upstream wrote it.
      'ratelimit-limit': '10, 10;w=1',
    });
    expect(
      pickHeaders({ 'content-type': 'application/json' }, new Set(UPSTREAM_LIMIT_HEADERS)),
    ).toBe(undefined);
  });
});

describe('pickHeaders, bounded', () => {
  it('reads a Retry-After date whole, never split at its comma', () => {
    const later = new Date(Date.now() + 90_000).toUTCString();
    const picked = pickHeaders({ 'retry-after': [later] }, new Set(UPSTREAM_LIMIT_HEADERS));
    expect(Number(picked?.['retry-after'])).toBeGreaterThanOrEqual(88);
    expect(Number(picked?.['retry-after'])).toBeLessThanOrEqual(90);
  });

  it('keeps a list with an empty member as it came', () => {
    expect(
      pickHeaders({ 'ratelimit-remaining': ['5', ' '] }, new Set(UPSTREAM_LIMIT_HEADERS)),
    ).toEqual({ 'ratelimit-remaining': '5,  ' });
  });

  it('counts a listed name once, ahead of the names that follow it', () => {
    const extra = Array.from({ length: MAX_PASSED_BACK_NAMES + 6 }, (_, i) => `x-ratelimit-e${i}`);
    const picked = pickHeaders(
      { 'ratelimit-remaining': '3', ...Object.fromEntries(extra.map((name) => [name, '1'])) },
      new Set(UPSTREAM_LIMIT_HEADERS),
    );
    expect(Object.keys(picked ?? {})).toEqual([
      'ratelimit-remaining',
      ...extra.slice(0, MAX_PASSED_BACK_NAMES - 1),
    ]);
  });

  it('skips a name that came without a value', () => {
    expect(
      pickHeaders(
        { 'ratelimit-limit': undefined, 'x-ratelimit-scope': undefined, 'x-ratelimit-used': '2' },
        new Set(UPSTREAM_LIMIT_HEADERS),
      ),
    ).toEqual({ 'x-ratelimit-used': '2' });
  });

  it('joins the lines of a name without an order, numbers included', () => {
    expect(
      pickHeaders(
        { [OWN_NAME]: ['5', '3'], 'x-ratelimit-resource': ['1', '2'] },
        new Set([...UPSTREAM_LIMIT_HEADERS, OWN_NAME]),
      ),
    ).toEqual({ [OWN_NAME]: '5, 3', 'x-ratelimit-resource': '1, 2' });
  });

  it('keeps a Retry-After it cannot read as it came, for the merge to drop', () => {
    expect(pickHeaders({ 'retry-after': 'soon' }, new Set(UPSTREAM_LIMIT_HEADERS))).toEqual({
      'retry-after': 'soon',
    });
  });

  it('keeps at most the bound of names even when more are listed', () => {
    const listed = Array.from({ length: MAX_PASSED_BACK_NAMES + 6 }, (_, i) => `x-listed-${i}`);
    const picked = pickHeaders(
      Object.fromEntries(listed.map((name) => [name, '1'])),
      new Set(listed),
    );
    expect(Object.keys(picked ?? {})).toEqual(listed.slice(0, MAX_PASSED_BACK_NAMES));
  });
});

describe('strictestHeaders, values that do not read as numbers', () => {
  it('lets a number take the place of one that is not, and never the other way', () => {
    expect(
      strictestHeaders([
        [
          attempt(1, { 'ratelimit-remaining': 'n/a', 'x-ratelimit-reset': '' }),
          attempt(2, { 'ratelimit-remaining': '4', 'x-ratelimit-reset': '30' }),
          attempt(3, { 'ratelimit-remaining': '', 'x-ratelimit-reset': 'soon' }),
        ],
      ]),
    ).toEqual({ 'ratelimit-remaining': '4', 'x-ratelimit-reset': '30' });
  });

  it('keeps the first of two values that do not read as numbers, and the first of a name without a rule', () => {
    expect(
      strictestHeaders([
        [
          attempt(1, { 'ratelimit-remaining': 'n/a', [OWN_NAME]: 'eu' }),
          attempt(2, { 'ratelimit-remaining': 'soon', [OWN_NAME]: '5' }),
        ],
      ]),
    ).toEqual({ 'ratelimit-remaining': 'n/a', [OWN_NAME]: 'eu' });
  });
});

describe('UPSTREAM_RESPONSE_HEADERS', () => {
  it('reads header names, lower-cased, each once', () => {
    expect(
      loadConfig({ UPSTREAM_RESPONSE_HEADERS: 'X-Quota-Left, x-quota-left,X-Shard' }).upstream
        .responseHeaders,
    ).toEqual(['x-quota-left', 'x-shard']);
    expect(loadConfig({}).upstream.responseHeaders).toEqual([]);
  });

  it.each([
    ['set-cookie', /set-cookie \(a cookie/],
    ['x-quota-left,Connection', /connection \(a hop-by-hop header\)/],
    ['proxy-authenticate', /hop-by-hop/],
    ['content-type', /content-type \(describes the upstream's own body\)/],
    ['Cache-Control', /cache-control \(the answer's caching/],
    ['vary', /caching/],
    ['access-control-allow-origin', /CORS/],
    ['x-request-id', /the facade's own header/],
    ['x-facade-debug', /the facade's own header/],
    ['CDN-Cache-Control', /cdn-cache-control \(the answer's caching/],
    ['Cloudflare-CDN-Cache-Control', /caching/],
    ['Surrogate-Control', /surrogate-control \(the answer's caching/],
    ['surrogate-key', /caching/],
    ['X-Accel-Redirect', /x-accel-redirect \(an instruction to the facade's own proxy\)/],
    ['x-accel-expires', /proxy/],
    ['X-Sendfile', /x-sendfile \(an instruction/],
    ['x-lighttpd-send-file', /an instruction/],
    ['Refresh', /refresh \(acts on the caller's browser\)/],
    ['clear-site-data', /browser/],
    ['traceparent', /traceparent \(trace context/],
    ['tracestate', /trace context/],
    ['baggage', /trace context/],
    ['x-b3-traceid', /trace context/],
    ['x quota', /header names/],
  ])('refuses UPSTREAM_RESPONSE_HEADERS=%j in one line naming the variable', (value, reason) => {
    const load = () => loadConfig({ UPSTREAM_RESPONSE_HEADERS: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/^UPSTREAM_RESPONSE_HEADERS: /);
    expect(load).toThrow(reason);
    expect(load).not.toThrow(/\n/);
  });
});
