import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { createHealth } from '../../src/http/health.js';
import { createLogger, yogaLogger } from '../../src/telemetry/logger.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';

type LogLine = Record<string, unknown> & { msg: string; level: string };

/** Log lines captured instead of printed: parsed, and as written. */
function captureLog(level: 'debug' | 'info' = 'debug') {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const logger = createLogger(level, {
    write(line: string) {
      raw.push(line);
      lines.push(JSON.parse(line) as LogLine);
    },
  });
  return { logger, lines, raw };
}

describe('operability', () => {
  const log = captureLog();
  const metrics = createMetrics();
  // Wired as main.ts wires it: the client reports its calls to the app's metrics.
  const h = useHarness({
    logger: log.logger,
    metrics,
    health: createHealth(),
    onCall: (call) => metrics.observeUpstreamCall(call),
  });

  it('answers /health and /readiness, and /readiness 503 once draining', async () => {
    const health = createHealth();
    const app = h.createApp({ health });
    expect((await app.fetch('http://facade.test/health')).status).toBe(200);
    expect((await app.fetch('http://facade.test/readiness')).status).toBe(200);
    const before = await postGraphQL(app, '{ __typename }');
    expect(before.headers.get('connection')).toBeNull();
    health.startDraining();
    expect((await app.fetch('http://facade.test/readiness')).status).toBe(503);
    expect((await app.fetch('http://facade.test/health')).status).toBe(200);
    // While draining, every answer closes its connection: keep-alive clients go elsewhere.
    const during = await postGraphQL(app, '{ __typename }');
    expect(during.data).toEqual({ __typename: 'Query' });
    expect(during.headers.get('connection')).toBe('close');
  });

  it('ties readiness to the upstream accepting connections when given a probe URL', async () => {
    const up = createHealth({ probeUrl: h.sandbox.url });
    expect(await up.ready()).toBe(true);
    const down = createHealth({ probeUrl: 'http://127.0.0.1:9', probeTimeoutMs: 500 });
    expect(await down.ready()).toBe(false);
  });

  it('logs one JSON line per request, with its id, operation, upstream calls and codes', async () => {
    log.lines.length = 0;
    const ok = await postGraphQL(
      h.app,
      'query TwoPages { a: repositories(limit: 1) { total } b: repositories(limit: 1, offset: 40) { total } }',
      {},
      { authorization: 'Bearer very-secret-token-123', 'x-request-id': 'req-abc.1' },
    );
    expect(ok.errors).toBeUndefined();
    expect(ok.headers.get('x-request-id')).toBe('req-abc.1');
    const bad = await postGraphQL(h.app, 'query Broken { nope }');
    expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);

    const requests = log.lines.filter((line) => line.msg === 'request');
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({
      level: 'info',
      requestId: 'req-abc.1',
      path: '/graphql',
      status: 200,
      operationName: 'TwoPages',
      operationType: 'query',
    });
    expect(requests[0]?.upstreamCalls).toBeGreaterThanOrEqual(1);
    expect(typeof requests[0]?.durationMs).toBe('number');
    expect(requests[1]).toMatchObject({
      requestId: bad.headers.get('x-request-id'),
      operationName: 'Broken',
      upstreamCalls: 0,
      errors: ['GRAPHQL_VALIDATION_FAILED'],
    });
    expect(log.raw.join('\n')).not.toMatch(/very-secret-token-123|authorization/i);
  });

  it('logs and counts the client identity it is sent, bounded', async () => {
    log.lines.length = 0;
    const client = (name: string, version: string) => ({
      'apollographql-client-name': name,
      'apollographql-client-version': version,
    });
    await postGraphQL(h.app, 'query Ident { __typename }', {}, client('web-app', '1.4.2'));
    await postGraphQL(h.app, 'query Ident { __typename }', {}, client('x'.repeat(500), '\u0001'));
    const [named, junk] = log.lines.filter((line) => line.msg === 'request');
    expect(named).toMatchObject({ clientName: 'web-app', clientVersion: '1.4.2' });
    expect(junk).not.toHaveProperty('clientName');
    expect(junk).not.toHaveProperty('clientVersion');
    for (let i = 0; i < 60; i++) {
      await postGraphQL(h.app, '{ __typename }', {}, client(`client-${i}`, '1'));
    }
    const text = await (await h.app.fetch('http://facade.test/metrics')).text();
    expect(text).toMatch(
      /graphql_client_operations_total\{clientName="web-app",clientVersion="1.4.2"\} 1/,
    );
    expect(text).toMatch(
      /graphql_client_operations_total\{clientName="unknown",clientVersion="unknown"\}/,
    );
    const series = text.match(/^graphql_client_operations_total\{/gm) ?? [];
    expect(series.length).toBeLessThanOrEqual(51);
    expect(text).toMatch(
      /graphql_client_operations_total\{clientName="other",clientVersion="other"\}/,
    );
  });

  it('refuses a subscription of a field it does not serve as a validation error: no stack logged, no internal error counted', async () => {
    const own = captureLog();
    const ownMetrics = createMetrics();
    const app = h.createApp({ logger: own.logger, metrics: ownMetrics });
    const answer = await postGraphQL(app, 'subscription Watch { repositories { total } }');
    expect(answer.status).toBe(400);
    expect(answer.errors).toEqual([
      expect.objectContaining({
        message: 'Cannot query field "repositories" on type "Subscription".',
        extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED' }),
      }),
    ]);
    expect(own.lines.filter((line) => line.level === 'error')).toEqual([]);
    expect(own.raw.join('\n')).not.toMatch(/stack|No root type/);
    expect(own.lines.find((line) => line.msg === 'request')).toMatchObject({
      operationType: 'subscription',
      errors: ['GRAPHQL_VALIDATION_FAILED'],
      upstreamCalls: 0,
    });
    const text = await ownMetrics.registry.metrics();
    expect(text).toMatch(/graphql_errors_total\{code="GRAPHQL_VALIDATION_FAILED"\} 1/);
    expect(text).not.toMatch(/INTERNAL_SERVER_ERROR/);
  });

  it('forwards the request id upstream', async () => {
    await postGraphQL(
      h.app,
      '{ repositories(limit: 1) { total } }',
      {},
      { 'x-request-id': 'trace-42' },
    );
    expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')[0]?.headers['x-request-id']).toBe(
      'trace-42',
    );
  });

  it('exposes operations, errors by code and upstream calls at /metrics', async () => {
    h.sandbox.setFault('GET /git/v1/repo', { status: 500, times: 1 });
    await postGraphQL(h.app, 'query Failing { repositories(limit: 1) { total } }');
    for (let i = 0; i < 3; i++) {
      await postGraphQL(h.app, 'query Listing { repositories(limit: 2) { total } }');
    }
    await postGraphQL(h.app, '{ a: __typename ');

    const response = await h.app.fetch('http://facade.test/metrics');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await response.text();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);

    expect(
      value(
        /graphql_envelop_request_duration_count\{operationType="query",operationName="Listing"\} (\d+)/,
      ),
    ).toBe(3);
    expect(value(/graphql_errors_total\{code="UPSTREAM_ERROR"\} (\d+)/)).toBe(1);
    expect(value(/graphql_errors_total\{code="GRAPHQL_PARSE_FAILED"\} (\d+)/)).toBe(1);
    expect(value(/upstream_calls_total\{route="GET \/git\/v1\/repo",status="500"\} (\d+)/)).toBe(1);
    expect(
      value(/upstream_calls_total\{route="GET \/git\/v1\/repo",status="200"\} (\d+)/),
    ).toBeGreaterThanOrEqual(3);
    expect(
      value(
        /upstream_call_duration_seconds_count\{route="GET \/git\/v1\/repo",status="200"\} (\d+)/,
      ),
    ).toBeGreaterThanOrEqual(3);
  });

  it('keeps operation-name labels bounded whatever names callers send', async () => {
    for (let i = 0; i < 120; i++) await postGraphQL(h.app, `query Op${i} { __typename }`);
    const text = await (await h.app.fetch('http://facade.test/metrics')).text();
    const names = new Set(
      [
        ...text.matchAll(/^graphql_envelop_request_duration_count\{[^}]*operationName="([^"]+)"/gm),
      ].map((m) => m[1]),
    );
    expect(names.size).toBeLessThanOrEqual(101);
    expect(names.has('other')).toBe(true);
  });

  it('gives a label only to executed operations, and with trusted documents only to theirs', async () => {
    const app = h.createApp({
      config: {
        persistedDocuments: {
          documents: new Map([['listing-1', 'query Listing { repositories(limit: 1) { total } }']]),
          only: false,
        },
      },
    });
    await postGraphQL(app, 'query Listing { repositories(limit: 1) { total } }');
    await postGraphQL(app, 'query Mine { __typename }');
    await postGraphQL(app, 'query Invalid { nope }');
    const text = await (await app.fetch('http://facade.test/metrics')).text();
    const names = [
      ...text.matchAll(/^graphql_envelop_request_duration_count\{[^}]*operationName="([^"]+)"/gm),
    ].map((m) => m[1]);
    expect(names.sort()).toEqual(['Listing', 'other']);
  });

  it("routes Yoga's own messages to the JSON log, a masked error with its original cause", () => {
    const lines: LogLine[] = [];
    const logger = createLogger('info', { write: (line: string) => lines.push(JSON.parse(line)) });
    const original = new Error('database exploded');
    yogaLogger(logger).error(
      new GraphQLError('Internal server error', { originalError: original }),
    );
    yogaLogger(logger).debug('not at info level');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'error', component: 'yoga', msg: 'database exploded' });
    expect(JSON.stringify(lines[0]?.err)).toMatch(/database exploded/);
  });

  it('keeps each app on its own registry', () => {
    const a = createMetrics();
    const b = createMetrics();
    expect(a.registry).not.toBe(b.registry);
  });
});

describe('the log, for caller mistakes', () => {
  const debug = captureLog();
  const info = captureLog('info');
  const h = useHarness();
  const apps = () => [
    { log: debug, app: h.createApp({ logger: debug.logger }) },
    { log: info, app: h.createApp({ logger: info.logger }) },
  ];
  const BIG = 'x'.repeat(900_000);
  const LINE_BOUND = 16_384;

  const send = async (body: unknown) => {
    const answers = [];
    for (const { log, app } of apps()) {
      log.lines.length = 0;
      log.raw.length = 0;
      const response = await app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      answers.push({ status: response.status, text: await response.text() });
    }
    return answers;
  };

  it('logs a bad variable at debug only, without its value, and answers a bounded message', async () => {
    const answers = await send({
      query: 'query Q($l: Int) { repositories(limit: $l) { total } }',
      variables: { l: `sk_live_${BIG}` },
    });
    for (const answer of answers) {
      expect(answer.text.length).toBeLessThan(4_096);
      const body = JSON.parse(answer.text) as {
        errors: Array<{ message: string; extensions: { code: string } }>;
      };
      expect(body.errors[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(body.errors[0]?.message).toMatch(/\$l/);
    }
    expect(info.lines.map((line) => line.level)).toEqual(['info']);
    expect(debug.lines.some((line) => line.level === 'debug' && line.component === 'yoga')).toBe(
      true,
    );
    for (const raw of [...debug.raw, ...info.raw]) {
      expect(raw).not.toContain('sk_live_');
      expect(raw.length).toBeLessThan(LINE_BOUND);
    }
  });

  it('never logs a secret sent with the wrong type', async () => {
    await send({
      query: 'mutation M($i: RequestDevServerInput!) { requestDevServer(input: $i) { isNew } }',
      variables: { i: { envVars: [{ name: 'STRIPE_KEY', value: ['sk_live_abc123'] }] } },
    });
    expect(info.lines.filter((line) => line.level !== 'info')).toEqual([]);
    expect([...debug.raw, ...info.raw].join('\n')).not.toContain('sk_live_abc123');
  });

  it('bounds what it logs of an operation name', async () => {
    for (const body of [
      { query: 'query Q { __typename }', operationName: BIG },
      { query: '{ __typename }', extensions: { [BIG]: 1 } },
      { query: `query ${BIG.replace(/x/g, 'Q')} { __typename }` },
    ]) {
      await send(body);
      expect(info.raw).toHaveLength(1);
      for (const raw of [...debug.raw, ...info.raw]) expect(raw.length).toBeLessThan(LINE_BOUND);
    }
  });

  it('bounds the messages of errors it logs, stack included', () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (line: string) => lines.push(line) });
    const error = new Error(`resolver failed on ${BIG}`);
    yogaLogger(logger).error(new GraphQLError('Internal server error', { originalError: error }));
    logger.error({ err: error, upstream: { message: BIG } }, 'upstream call failed');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line.length).toBeLessThan(LINE_BOUND);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ level: 'error', component: 'yoga' });
  });
});
