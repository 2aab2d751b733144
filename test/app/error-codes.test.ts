import { createHash } from 'node:crypto';
import { Agent, type Dispatcher } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../src/errors.js';
import { createLogger } from '../../src/telemetry/logger.js';
import {
  createHarness,
  type GraphQLResponse,
  type Harness,
  useHarness,
} from '../helpers/harness.js';

const LIST = '{ repositories(limit: 2) { total items { id } } }';

/** Every code of the contract's error table, each provoked from outside: a request, and the
 * sandbox's answer where the code is the upstream's. A code added to the table without a way to
 * provoke it here fails the last test. */
describe('every error code of the contract, provoked from outside', () => {
  // No retries: each upstream answer is seen once, so the mapping is what is tested.
  const h = useHarness({ config: { upstream: { retries: 0, breakerThreshold: 0 } } });
  const provoked = new Set<ErrorCode>();

  const expectCode = (result: GraphQLResponse, code: ErrorCode) => {
    const codes = (result.errors ?? []).map((error) => error.extensions.code);
    expect(codes).toContain(code);
    for (const error of result.errors ?? []) {
      expect(ERROR_CODES).toContain(error.extensions.code);
      expect(JSON.stringify(error)).not.toMatch(/stack|\bat \w+ \(|node_modules|\/src\//);
    }
    provoked.add(code);
  };
  const post = (app: Harness['app'], body: Record<string, unknown>) =>
    Promise.resolve(
      app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
      }),
    ).then(async (response) => ({
      status: response.status,
      headers: response.headers,
      ...((await response.json()) as Omit<GraphQLResponse, 'status' | 'headers'>),
    }));

  it.each([
    [400, 'BAD_USER_INPUT'],
    [401, 'UNAUTHENTICATED'],
    [403, 'FORBIDDEN'],
    [404, 'NOT_FOUND'],
    [429, 'RATE_LIMITED'],
    [500, 'UPSTREAM_ERROR'],
    [408, 'UPSTREAM_TIMEOUT'],
    // Not the caller's input as far as the contract can tell: the upstream refused the facade.
    [409, 'UPSTREAM_ERROR'],
    [418, 'UPSTREAM_ERROR'],
    // Redirects are not followed: JSON was expected.
    [302, 'UPSTREAM_BAD_RESPONSE'],
    [304, 'UPSTREAM_BAD_RESPONSE'],
  ] as Array<[number, ErrorCode]>)('answers an upstream %i as %s', async (status, code) => {
    h.sandbox.setFault('GET /git/v1/repo', { status, body: { message: `said ${status}` } });
    expectCode(await h.gql(LIST), code);
  });

  it('answers UPSTREAM_TIMEOUT when no answer comes in time', async () => {
    const slow = await createHarness({ config: { upstream: { timeoutMs: 100, retries: 0 } } });
    try {
      slow.sandbox.setFault('GET /git/v1/repo', { delayMs: 1_000, times: 1 });
      expectCode(await slow.gql(LIST), 'UPSTREAM_TIMEOUT');
    } finally {
      await slow.close();
    }
  });

  it('answers UPSTREAM_UNAVAILABLE when the connection is reset', async () => {
    h.sandbox.setFault('GET /git/v1/repo', { reset: true });
    expectCode(await h.gql(LIST), 'UPSTREAM_UNAVAILABLE');
  });

  it('answers UPSTREAM_BAD_RESPONSE to a body that is not JSON', async () => {
    h.sandbox.setFault('GET /git/v1/repo', { notJson: true });
    expectCode(await h.gql(LIST), 'UPSTREAM_BAD_RESPONSE');
  });

  it('answers UPSTREAM_BUDGET_EXCEEDED past MAX_UPSTREAM_CALLS, the field within it answering', async () => {
    const app = h.createApp({ config: { maxUpstreamCalls: 1, maxCoalescedRange: 0 } });
    const result = await post(app, {
      query:
        '{ a: repositories(limit: 1) { items { id } } b: repositories(limit: 1, offset: 9) { items { id } } }',
    });
    expect(result.data).toMatchObject({ a: { items: [{ id: expect.any(String) }] }, b: null });
    expectCode(result, 'UPSTREAM_BUDGET_EXCEEDED');
  });

  it('answers BAD_USER_INPUT to its own validation, with no upstream call', async () => {
    expectCode(await h.gql('{ repositories(limit: -1) { total } }'), 'BAD_USER_INPUT');
  });

  it('answers GRAPHQL_PARSE_FAILED and GRAPHQL_VALIDATION_FAILED', async () => {
    expectCode(await h.gql('{ repositories('), 'GRAPHQL_PARSE_FAILED');
    expectCode(await h.gql('{ nope }'), 'GRAPHQL_VALIDATION_FAILED');
  });

  it('answers PERSISTED_QUERY_NOT_FOUND to an unknown APQ hash', async () => {
    const hash = createHash('sha256').update('{ never { sent } }').digest('hex');
    expectCode(
      await post(h.app, { extensions: { persistedQuery: { version: 1, sha256Hash: hash } } }),
      'PERSISTED_QUERY_NOT_FOUND',
    );
  });

  it('answers PERSISTED_QUERY_ONLY to a document sent as text when only trusted ones run', async () => {
    const app = h.createApp({
      config: {
        persistedDocuments: { documents: new Map([['a1', '{ __typename }']]), only: true },
        apq: { enabled: false },
      },
    });
    expectCode(await post(app, { query: '{ __typename }' }), 'PERSISTED_QUERY_ONLY');
  });

  describe('INTERNAL_SERVER_ERROR', () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger('info', {
      write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>),
    });
    // A defect of ours stands in for any: the HTTP layer under the client throws a plain
    // TypeError, which no code path expects, as a decoder with a bug would.
    class Defective extends Agent {
      override request(): never {
        throw new TypeError('defect at /srv/facade/internal.ts with secret-detail');
      }
    }
    let broken: Harness | undefined;
    afterAll(() => broken?.close());

    it('answers a generic message with no stack, and logs the details with the request id', async () => {
      broken = await createHarness({ logger, dispatcher: new Defective() as Dispatcher });
      const response = await post(broken.app, { query: LIST });
      expect(response.data).toEqual({ repositories: null });
      expect(response.errors).toEqual([
        { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } },
      ]);
      expect(JSON.stringify(response)).not.toMatch(/secret-detail|TypeError|internal\.ts/);
      expectCode(response, 'INTERNAL_SERVER_ERROR');

      const requestId = response.headers.get('x-request-id');
      const detail = lines.filter((line) => JSON.stringify(line).includes('secret-detail'));
      expect(detail).toHaveLength(1);
      expect(detail[0]).toMatchObject({
        level: 'error',
        requestId,
        path: 'repositories',
        err: { type: 'TypeError', stack: expect.stringMatching(/defect at/) },
      });
    });
  });

  it('has provoked every code of the table', () => {
    expect([...provoked].sort()).toEqual([...ERROR_CODES].sort());
  });
});
