import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, upstreamRequests } from './helpers.js';

const LIST = '{ repositories(limit: 2) { total items { id } } }';
const CREATE = 'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }';

describe('upstream errors', () => {
  let h: Harness;
  beforeAll(async () => {
    // No retries here: each status is seen once, so the mapping itself is what is tested.
    h = await createHarness({ config: { upstream: { retries: 0, breakerThreshold: 0 } } });
  });
  afterAll(() => h.close());
  beforeEach(() => {
    h.sandbox.clearFaults();
    h.sandbox.clearRequests();
  });

  const table: Array<[number, string]> = [
    [400, 'BAD_USER_INPUT'],
    [422, 'BAD_USER_INPUT'],
    [401, 'UNAUTHENTICATED'],
    [403, 'FORBIDDEN'],
    [404, 'NOT_FOUND'],
    [429, 'RATE_LIMITED'],
    [500, 'UPSTREAM_ERROR'],
    [502, 'UPSTREAM_ERROR'],
    [503, 'UPSTREAM_ERROR'],
  ];
  for (const [status, code] of table) {
    it(`maps ${status} to ${code} with extensions.upstream and nothing internal`, async () => {
      h.sandbox.setFault('GET /git/v1/repo', {
        status,
        body: { message: `upstream says ${status}` },
      });
      const result = await h.gql(LIST);
      expect(result.data).toBeNull();
      const [error] = result.errors ?? [];
      expect(error?.message).toBe(`upstream says ${status}`);
      expect(error?.extensions).toEqual({
        code,
        upstream: { status, message: `upstream says ${status}` },
      });
      expect(JSON.stringify(result)).not.toMatch(/stack|\bat \w+ \(|127\.0\.0\.1|node_modules/);
    });
  }

  it('gives retryAfter in seconds when a 429 says Retry-After', async () => {
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 429,
      body: { message: 'slow down' },
      headers: { 'retry-after': '7' },
    });
    const result = await h.gql(LIST);
    expect(result.errors?.[0]?.extensions).toEqual({
      code: 'RATE_LIMITED',
      retryAfter: 7,
      upstream: { status: 429, message: 'slow down' },
    });
  });

  it('maps the same statuses for mutations', async () => {
    h.sandbox.setFault('POST /domains/v1/verifications', {
      status: 403,
      body: { message: 'not your account' },
    });
    const result = await h.gql(CREATE);
    expect(result.errors?.[0]?.extensions).toEqual({
      code: 'FORBIDDEN',
      upstream: { status: 403, message: 'not your account' },
    });
  });

  it('never passes on an error body that is not JSON (an HTML page, a stack trace)', async () => {
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 500,
      body: '<html>Traceback at /srv/app.py line 3</html>',
    });
    const result = await h.gql(LIST);
    expect(result.errors?.[0]?.extensions).toEqual({
      code: 'UPSTREAM_ERROR',
      upstream: { status: 500, message: 'The upstream answered 500' },
    });
    expect(JSON.stringify(result)).not.toContain('Traceback');
  });

  it('names the field of an answer that does not match the spec', async () => {
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 200,
      body: {
        repositories: [{ branches: { main: { default: 'yes', target: 'abc' } } }],
        total: 1,
        offset: 0,
      },
    });
    const result = await h.gql(LIST);
    expect(result.errors?.[0]?.extensions.code).toBe('UPSTREAM_BAD_RESPONSE');
    expect(result.errors?.[0]?.message).toContain('repositories.0.branches.main.default');

    h.sandbox.setFault('GET /git/v1/repo', { status: 200, body: { repositories: [], offset: 0 } });
    const missing = await h.gql(LIST);
    expect(missing.errors?.[0]?.message).toContain('total');
  });

  it('answers verifyDomain refusals as an answer, but 401/403/429/5xx as errors', async () => {
    const VERIFY =
      'mutation { verifyDomain(input: { domain: "Example.COM." }) { domain verified message } }';
    h.sandbox.setFault('PUT /domains/v1/verifications', {
      status: 404,
      body: { message: 'no verification for example.com' },
    });
    const notFound = await h.gql(VERIFY);
    expect(notFound.data?.verifyDomain).toEqual({
      domain: 'example.com',
      verified: false,
      message: 'no verification for example.com',
    });
    expect(upstreamRequests(h.sandbox, 'PUT /domains/v1/verifications')[0]?.body).toEqual({
      domain: 'example.com',
    });
    for (const [status, code] of [
      [401, 'UNAUTHENTICATED'],
      [403, 'FORBIDDEN'],
      [429, 'RATE_LIMITED'],
      [503, 'UPSTREAM_ERROR'],
    ] as const) {
      h.sandbox.setFault('PUT /domains/v1/verifications', { status, body: { message: 'no' } });
      const result = await h.gql(VERIFY);
      expect(result.errors?.[0]?.extensions.code).toBe(code);
    }
  });
});

describe('upstream answers without a specified body', () => {
  it('takes any 2xx of the verify call as verified, JSON or not', async () => {
    const h = await createHarness();
    try {
      for (const body of ['OK', '', { whatever: true }]) {
        h.sandbox.setFault('PUT /domains/v1/verifications', { status: 200, body });
        const result = await h.gql(
          'mutation { verifyDomain(input: { domain: "example.com" }) { verified message } }',
        );
        expect(result.data?.verifyDomain).toEqual({ verified: true, message: null });
      }
    } finally {
      await h.close();
    }
  });
});
