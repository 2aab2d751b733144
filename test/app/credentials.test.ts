import { describe, expect, it } from 'vitest';
import { bearerToken, createTokenMatcher, tokenId } from '../../src/credentials.js';
import { createHarness, type Harness, upstreamRequests, useHarness } from '../helpers/harness.js';

const QUERY = '{ repositories(limit: 5) { total items { id } } }';
type Ids = { repositories: { total: number; items: Array<{ id: string }> } };

/** The ids the sandbox itself lists for a token: the ground truth of "this caller's data". */
async function directIds(h: Harness, token: string): Promise<string[]> {
  const response = await fetch(`${h.sandbox.url}/git/v1/repo?limit=5`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const body = (await response.json()) as { repositories: Array<{ id: string }> };
  return body.repositories.map((repository) => repository.id);
}

describe('credentials, default mode', () => {
  const h = useHarness();

  it("forwards the caller's Authorization as it came, and none when none came", async () => {
    await h.gql(QUERY, {}, { authorization: 'Bearer caller-token-1' });
    await h.gql(QUERY);
    const [first, second] = upstreamRequests(h.sandbox, 'GET /git/v1/repo');
    expect(first?.headers.authorization).toBe('Bearer caller-token-1');
    expect(second?.headers.authorization).toBeUndefined();
  });

  it('keeps two concurrent callers apart: each sees only its own account', async () => {
    const tokens = ['alice-token', 'bob-token', 'carol-token', 'dave-token'];
    const expected = await Promise.all(tokens.map((token) => directIds(h, token)));
    h.sandbox.clearRequests();
    // The upstream answers none until every request is in flight, so any sharing would show.
    let answerAll = () => {};
    const gate = new Promise<void>((resolve) => {
      answerAll = resolve;
    });
    h.sandbox.setFault('GET /git/v1/repo', { until: gate, times: tokens.length });
    const pending = Promise.all(
      tokens.map((token) => h.gql<Ids>(QUERY, {}, { authorization: `Bearer ${token}` })),
    );
    try {
      await expect
        .poll(() => upstreamRequests(h.sandbox, 'GET /git/v1/repo').length)
        .toBe(tokens.length);
    } finally {
      answerAll();
    }
    const answers = await pending;
    for (const [index, ids] of expected.entries()) {
      expect(answers[index]?.data?.repositories.items.map((item) => item.id)).toEqual(ids);
    }
    expect(new Set(answers.map((a) => JSON.stringify(a.data))).size).toBe(tokens.length);
  });
});

describe('credentials, service-key mode with CLIENT_TOKENS', () => {
  const h = useHarness({
    config: {
      upstream: { apiKey: 'facade-service-key' },
      clientTokens: ['client-token-a', 'client-token-b'],
    },
  });

  it('refuses a request without an accepted token before anything runs', async () => {
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer wrong-token' },
      { authorization: 'Bearer client-token-a-longer' },
      { authorization: 'Basic Y2xpZW50LXRva2VuLWE6' },
    ];
    for (const headers of attempts) {
      const response = await h.gql(QUERY, {}, headers);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(response.errors?.[0]?.extensions.code).toBe('UNAUTHENTICATED');
      expect(response.errors?.[0]?.message).toBe(
        'This endpoint needs "Authorization: Bearer <token>" with a token it accepts',
      );
      expect(JSON.stringify(response)).not.toMatch(/wrong-token|client-token/);
    }
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it("sends the facade's key upstream, never the caller's token", async () => {
    const response = await h.gql<Ids>(QUERY, {}, { authorization: 'Bearer client-token-b' });
    expect(response.errors).toBeUndefined();
    expect(response.data?.repositories.items.map((i) => i.id)).toEqual(
      await directIds(h, 'facade-service-key'),
    );
    const [sent] = upstreamRequests(h.sandbox, 'GET /git/v1/repo');
    expect(sent?.headers.authorization).toBe('Bearer facade-service-key');
  });

  it("never passes the facade's key back in an upstream message", async () => {
    const caller = { authorization: 'Bearer client-token-a' };
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 403,
      body: { message: 'Bearer facade-service-key may not list; facade-service-key is read-only' },
    });
    const [error] = (await h.gql(QUERY, {}, caller)).errors ?? [];
    const redacted = 'Bearer [redacted] may not list; [redacted] is read-only';
    expect(error?.message).toBe(redacted);
    expect(error?.extensions).toEqual({
      code: 'FORBIDDEN',
      upstream: { status: 403, message: redacted },
    });

    // verifyDomain passes a refusal's message on as its answer.
    h.sandbox.setFault('PUT /domains/v1/verifications', {
      status: 404,
      body: { message: 'no verification under facade-service-key' },
    });
    const verify = await h.gql<{ verifyDomain: { message: string } }>(
      'mutation { verifyDomain(input: { domain: "example.com" }) { message } }',
      {},
      caller,
    );
    expect(verify.data?.verifyDomain.message).toBe('no verification under [redacted]');
  });

  it('redacts the key before cutting a message to its bound, so no part of it is left', async () => {
    // The key starts 5 characters before the bound: cut first, its first 5 characters would stay.
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 403,
      body: { message: `${'x'.repeat(495)}facade-service-key` },
    });
    const [error] =
      (await h.gql(QUERY, {}, { authorization: 'Bearer client-token-b' })).errors ?? [];
    expect(error?.message).toBe(`${'x'.repeat(495)}[reda`);
  });
});

describe('credentials, service-key mode with the anonymous opt-out', () => {
  it("serves callers with the facade's key and forwards nothing of theirs", async () => {
    const h = await createHarness({
      config: { upstream: { apiKey: 'facade-service-key' }, allowAnonymousServiceKey: true },
    });
    try {
      const response = await h.gql(QUERY, {}, { authorization: 'Bearer whoever' });
      expect(response.errors).toBeUndefined();
      const [sent] = upstreamRequests(h.sandbox, 'GET /git/v1/repo');
      expect(sent?.headers.authorization).toBe('Bearer facade-service-key');
    } finally {
      await h.close();
    }
  });
});

describe('createTokenMatcher', () => {
  it('accepts exactly the configured tokens', () => {
    const accepts = createTokenMatcher(['alpha', 'beta-token']);
    expect(accepts('alpha')).toBe(true);
    expect(accepts('beta-token')).toBe(true);
    for (const other of ['alph', 'alphaa', 'ALPHA', 'beta', '', undefined]) {
      expect(accepts(other)).toBe(false);
    }
    expect(createTokenMatcher([])('anything')).toBe(false);
  });

  it('never takes a missing token for an empty one', () => {
    expect(createTokenMatcher([''])(undefined)).toBe(false);
  });
});

describe('bearerToken', () => {
  it('reads the token of a Bearer header, whatever the case of the scheme', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer\tabc ')).toBe('abc');
    for (const header of [null, '', 'Basic abc', 'Bearer', 'Bearer a b']) {
      expect(bearerToken(header)).toBeUndefined();
    }
  });
});

describe('tokenId', () => {
  it('names a token by the first 22 characters of its SHA-256, in base64url', () => {
    expect(tokenId('alpha')).toBe('jtP2rWhblZ6tcCJRjhr3bN');
  });
});

describe('FORWARD_HEADERS', () => {
  const h = useHarness({ config: { forwardHeaders: ['accept-language', 'x-tenant-id'] } });
  const CALLER = {
    authorization: 'Bearer caller-token-1',
    'accept-language': 'de-CH, de;q=0.9',
    'x-tenant-id': 'tenant-42',
    cookie: 'session=s3cret',
    'x-other': 'not named',
    'user-agent': 'test-agent/1.0',
  };

  it('passes on the named headers to every upstream call, and nothing else of the caller', async () => {
    await h.gql(QUERY, {}, CALLER);
    await h.gql(
      'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }',
      {},
      CALLER,
    );
    const calls = upstreamRequests(h.sandbox);
    expect(calls.map((call) => `${call.method} ${call.path}`)).toEqual([
      'GET /git/v1/repo',
      'POST /domains/v1/verifications',
    ]);
    for (const call of calls) {
      expect(call.headers['accept-language']).toBe('de-CH, de;q=0.9');
      expect(call.headers['x-tenant-id']).toBe('tenant-42');
      expect(call.headers.authorization).toBe('Bearer caller-token-1');
      expect(call.headers.cookie).toBeUndefined();
      expect(call.headers['x-other']).toBeUndefined();
      expect(call.headers['user-agent']).not.toBe('test-agent/1.0');
    }
  });

  it('sends a named header only when the caller sent it', async () => {
    await h.gql(QUERY, {}, { 'x-tenant-id': 'tenant-7' });
    const [call] = upstreamRequests(h.sandbox, 'GET /git/v1/repo');
    expect(call?.headers['x-tenant-id']).toBe('tenant-7');
    expect(call?.headers['accept-language']).toBeUndefined();
  });

  it('forwards none of these headers by default', async () => {
    const app = h.createApp({ config: { forwardHeaders: [] } });
    const response = await app.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...CALLER },
      body: JSON.stringify({ query: QUERY }),
    });
    expect(response.status).toBe(200);
    const [call] = upstreamRequests(h.sandbox, 'GET /git/v1/repo');
    expect(call?.headers['x-tenant-id']).toBeUndefined();
    expect(call?.headers['accept-language']).toBeUndefined();
  });

  it('lets allowed pages send the named headers (CORS)', async () => {
    const app = h.createApp({ config: { corsOrigins: ['https://app.example.com'] } });
    const preflight = await app.fetch('http://facade.test/graphql', {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, x-tenant-id',
      },
    });
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/x-tenant-id/);
  });
});
