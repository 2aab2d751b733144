import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type OtlpReceiver,
  type ReceivedSpan,
  startOtlpReceiver,
} from '../helpers/otlp-receiver.js';
import { post, startFacade } from '../helpers/process.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';
const QUERY =
  'query TwoPages($secret: Int) { a: repositories(limit: 1) { items { id } } b: repositories(limit: 1, offset: 45) { items { id } } c: repositories(limit: 1, offset: $secret) { total } }';

interface SandboxRequest {
  path: string;
  headers: Record<string, string>;
}

describe('OpenTelemetry tracing', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver?.close());

  it("exports the server, operation, phase and upstream spans in the caller's trace", async () => {
    const facade = await startFacade({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'facade-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test',
      // Pages never merged by range: a and b are two calls; c, which needs only the total, shares a's.
      MAX_COALESCED_RANGE: '0',
    });
    let sandboxSeen: SandboxRequest[] = [];
    try {
      const answer = await fetch(facade.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
        },
        body: JSON.stringify({ query: QUERY, variables: { secret: 987654 } }),
      });
      expect(answer.status).toBe(200);
      const body = (await answer.json()) as { errors?: unknown };
      expect(body.errors).toBeUndefined();
      const log = (await (await fetch(`${facade.sandboxUrl}/__sandbox/requests`)).json()) as {
        requests: SandboxRequest[];
      };
      sandboxSeen = log.requests;
      // The line is written once the answer is out: under load it may reach stdout after it.
      await expect
        .poll(() => facade.lines.find((line) => line.msg === 'request'))
        .toMatchObject({ trace_id: TRACE_ID });
    } finally {
      // SIGTERM drains and then exports what the SDK still holds.
      expect(await facade.stop()).toBe(0);
    }

    const spans = receiver.spans.filter((span) => span.traceId === TRACE_ID);
    const named = (name: string) => spans.filter((span) => span.name === name);
    const one = (name: string) => {
      const found = named(name);
      expect(found, `${name} in ${spans.map((s) => s.name).join(', ')}`).toHaveLength(1);
      return found[0] as ReceivedSpan;
    };

    const server = one('POST /graphql');
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.kind).toBe(2);
    expect(server.service).toBe('facade-under-test');
    const operation = one('query TwoPages');
    expect(operation.parentSpanId).toBe(server.spanId);
    expect(operation.attributes).toMatchObject({
      'graphql.operation.type': 'query',
      'graphql.operation.name': 'TwoPages',
    });
    for (const phase of ['graphql.parse', 'graphql.validate', 'graphql.execute']) {
      expect(one(phase).parentSpanId).toBe(operation.spanId);
    }
    const execute = one('graphql.execute');

    const client = named('GET /git/v1/repo');
    expect(client).toHaveLength(2);
    expect(client.map((span) => span.attributes['facade.upstream.callers']).sort()).toEqual([1, 2]);
    for (const span of client) {
      expect(span.kind).toBe(3);
      expect(span.parentSpanId).toBe(execute.spanId);
      expect(span.attributes).toMatchObject({
        'http.request.method': 'GET',
        'url.template': '/git/v1/repo',
        'http.response.status_code': 200,
        'facade.upstream.attempt': 1,
      });
      expect(JSON.stringify(span.attributes)).not.toContain('offset=');
    }
    // The upstream saw each client span as its parent, in the caller's trace.
    const upstreamParents = sandboxSeen
      .filter((request) => request.path === '/git/v1/repo')
      .map((request) => request.headers.traceparent);
    expect(upstreamParents.sort()).toEqual(
      client.map((span) => `00-${TRACE_ID}-${span.spanId}-01`).sort(),
    );
    // No variable value reaches a span.
    expect(JSON.stringify(receiver.spans)).not.toContain('987654');
  }, 60_000);

  it("logs the SDK's warning for a value it cannot use, and exports with its default", async () => {
    const facade = await startFacade({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'facade-bad-sampler',
      OTEL_TRACES_SAMPLER: 'sometimes',
    });
    try {
      const answer = await post(facade.url, '{ repositories(limit: 1) { total } }', {
        traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
      });
      expect(answer.status).toBe(200);
    } finally {
      expect(await facade.stop()).toBe(0);
    }
    const warning = facade.lines.find((line) => line.component === 'opentelemetry');
    expect(warning?.msg).toMatch(/^OTEL_TRACES_SAMPLER value "sometimes" invalid/);
    // parentbased_always_on, the default: the caller sampled its trace, so the spans are there.
    const ours = receiver.spans.filter((span) => span.service === 'facade-bad-sampler');
    expect(ours.some((span) => span.name === 'POST /graphql')).toBe(true);
  }, 60_000);

  it('exports nothing when no endpoint is set', async () => {
    const before = receiver.requests.length;
    const facade = await startFacade({ OTEL_SERVICE_NAME: 'facade-without-endpoint' });
    try {
      const answer = await post(facade.url, '{ repositories(limit: 1) { total } }', {
        traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
      });
      expect(answer.status).toBe(200);
      // The caller's trace still reaches the upstream, the caller's span its parent.
      const log = (await (await fetch(`${facade.sandboxUrl}/__sandbox/requests`)).json()) as {
        requests: SandboxRequest[];
      };
      expect(log.requests.map((request) => request.headers.traceparent)).toContain(
        `00-${TRACE_ID}-${CALLER_SPAN}-01`,
      );
    } finally {
      expect(await facade.stop()).toBe(0);
    }
    expect(receiver.requests.length).toBe(before);
    expect(facade.lines.find((line) => line.msg === 'request')).not.toHaveProperty('span_id');
  }, 60_000);
});
