import { describe, expect, it } from 'vitest';
import { createHarness, upstreamRequests, useHarness } from '../helpers/harness.js';

const LIST = '{ repositories(limit: 2) { total items { id } } }';
const CREATE = 'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }';

describe('upstream errors', () => {
  // No retries here: each status is seen once, so the mapping itself is what is tested.
  const h = useHarness({ config: { upstream: { retries: 0, breakerThreshold: 0 } } });

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
      expect(result.data).toEqual({ repositories: null });
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

  it('bounds a Retry-After years ahead to one hour', async () => {
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 429,
      body: { message: 'much later' },
      headers: { 'retry-after': new Date(Date.now() + 10 * 365 * 86_400_000).toUTCString() },
    });
    const dated = await h.gql(LIST);
    expect(dated.errors?.[0]?.extensions.retryAfter).toBe(3600);
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 429,
      body: { message: 'much later' },
      headers: { 'retry-after': '344329816' },
    });
    const seconds = await h.gql(LIST);
    expect(seconds.errors?.[0]?.extensions.retryAfter).toBe(3600);
  });

  for (const field of ['total', 'offset'] as const) {
    it(`answers an upstream ${field} beyond GraphQL's Int with UPSTREAM_BAD_RESPONSE naming it`, async () => {
      h.sandbox.setFault('GET /git/v1/repo', {
        status: 200,
        body: { repositories: [], total: 0, offset: 0, [field]: 3_000_000_000 },
      });
      const result = await h.gql(LIST);
      expect(result.errors?.[0]?.extensions.code).toBe('UPSTREAM_BAD_RESPONSE');
      expect(result.errors?.[0]?.message).toContain(`at ${field}:`);
    });
  }

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

  it('cuts an upstream message to 500 characters, in message and extensions.upstream', async () => {
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 503,
      body: { message: 'overloaded '.repeat(1000).slice(0, 10_000) },
    });
    const [error] = (await h.gql(LIST)).errors ?? [];
    expect(error?.extensions.code).toBe('UPSTREAM_ERROR');
    expect(error?.message).toHaveLength(500);
    expect(error?.extensions.upstream).toEqual({ status: 503, message: error?.message });
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

  const brokenLists: Array<[string, unknown]> = [
    ['repositories', { repositories: {}, total: 0, offset: 0 }],
    ['offset', { repositories: [], total: 0, offset: -1 }],
    ['total', { repositories: [], total: 1.5, offset: 0 }],
    ['repositories.0', { repositories: ['x'], total: 1, offset: 0 }],
    ['repositories.0.id', { repositories: [{ id: true }], total: 1, offset: 0 }],
    ['repositories.0.defaultBranch', { repositories: [{ defaultBranch: 1 }], total: 1, offset: 0 }],
    ['repositories.0.branches', { repositories: [{ branches: [] }], total: 1, offset: 0 }],
    [
      'repositories.0.branches.main.name',
      {
        repositories: [{ branches: { main: { default: true, target: 'a', name: null } } }],
        total: 1,
        offset: 0,
      },
    ],
    [
      'repositories.0.branches.main.target',
      { repositories: [{ branches: { main: { default: true } } }], total: 1, offset: 0 },
    ],
    [
      'repositories.0.branches.main.default',
      { repositories: [{ branches: { main: { target: 'a' } } }], total: 1, offset: 0 },
    ],
    ['repositories.1.tags', { repositories: [{}, { tags: 'v1' }], total: 2, offset: 0 }],
    ['repositories.0.tags.v1', { repositories: [{ tags: { v1: 'abc' } }], total: 1, offset: 0 }],
    [
      'repositories.0.tags.v1.target',
      { repositories: [{ tags: { v1: { name: 'v1' } } }], total: 1, offset: 0 },
    ],
    [
      'repositories.0.tags.v1.message',
      { repositories: [{ tags: { v1: { target: 'a', message: 3 } } }], total: 1, offset: 0 },
    ],
  ];
  for (const [field, body] of brokenLists) {
    it(`names ${field} when the list of repositories breaks the spec there`, async () => {
      h.sandbox.setFault('GET /git/v1/repo', { status: 200, body });
      const result = await h.gql(LIST);
      expect(result.errors?.[0]?.extensions.code).toBe('UPSTREAM_BAD_RESPONSE');
      expect(result.errors?.[0]?.message).toMatch(
        new RegExp(`does not match the spec at ${field.replaceAll('.', '\\.')}: expected `),
      );
    });
  }

  it('takes what the spec allows in a list: absent or null maps and names, extra fields', async () => {
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 200,
      body: {
        repositories: [
          { id: 7, branches: null, extra: { nested: true } },
          {
            defaultBranch: null,
            branches: {
              b: { default: false, target: 't1' },
              a: { default: true, target: 't2', name: 'A' },
            },
            tags: { v1: { target: 't3', message: null }, v2: { target: 't4' } },
          },
        ],
        total: 2,
        offset: 0,
        next: 'ignored',
      },
    });
    const result = await h.gql(
      '{ repositories(limit: 2) { total items { id defaultBranch branches { name target isDefault } tags { name target message } } } }',
    );
    expect(result.errors).toBeUndefined();
    expect(result.data).toEqual({
      repositories: {
        total: 2,
        items: [
          { id: '7', defaultBranch: null, branches: [], tags: [] },
          {
            id: null,
            defaultBranch: null,
            branches: [
              { name: 'b', target: 't1', isDefault: false },
              { name: 'A', target: 't2', isDefault: true },
            ],
            tags: [
              { name: 'v1', target: 't3', message: null },
              { name: 'v2', target: 't4', message: null },
            ],
          },
        ],
      },
    });
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
