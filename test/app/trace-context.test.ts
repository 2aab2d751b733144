import { describe, expect, it } from 'vitest';
import { postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`;
const TWO_CALLS =
  '{ a: repositories(limit: 1) { items { id } } b: repositories(limit: 1, offset: 45) { items { id } } }';

describe('trace context to the upstream, no exporter configured', () => {
  // Pages never merged, so that one request makes two upstream calls.
  const h = useHarness({ config: { maxCoalescedRange: 0 } });

  const sent = () =>
    upstreamRequests(h.sandbox, 'GET /git/v1/repo').map(({ headers }) => ({
      traceparent: headers.traceparent,
      tracestate: headers.tracestate,
      baggage: headers.baggage,
    }));

  it("carries the caller's trace context to every upstream call, its span the parent", async () => {
    const answer = await h.gql(TWO_CALLS, undefined, {
      traceparent: TRACEPARENT,
      tracestate: 'vendor=opaque',
      baggage: 'tenant=acme',
    });
    expect(answer.errors).toBeUndefined();
    // No SDK runs, so no span of the facade's exists: the caller's span is the upstream's parent,
    // as OpenTelemetry's API passes a context through without an SDK.
    expect(sent()).toEqual([
      { traceparent: TRACEPARENT, tracestate: 'vendor=opaque', baggage: 'tenant=acme' },
      { traceparent: TRACEPARENT, tracestate: 'vendor=opaque', baggage: 'tenant=acme' },
    ]);
  });

  it("keeps the caller's sampling decision", async () => {
    await h.gql('{ repositories(limit: 1) { total } }', undefined, {
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-00`,
    });
    expect(sent()[0]?.traceparent).toBe(`00-${TRACE_ID}-${CALLER_SPAN}-00`);
  });

  it.each([
    ['no traceparent', {}],
    ['a malformed traceparent', { traceparent: 'not-a-trace', tracestate: 'vendor=x' }],
    ['an all-zero trace id', { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN}-01` }],
    ['version ff', { traceparent: `ff-${TRACE_ID}-${CALLER_SPAN}-01` }],
  ])('sends no trace context for %s', async (_, headers: Record<string, string>) => {
    await h.gql('{ repositories(limit: 1) { total } }', undefined, headers);
    expect(sent()).toEqual([{ traceparent: undefined, tracestate: undefined, baggage: undefined }]);
  });
});

describe('OTEL_PROPAGATORS, no exporter configured', () => {
  const h = useHarness();
  const sent = () =>
    upstreamRequests(h.sandbox, 'GET /git/v1/repo').map(({ headers }) => ({
      traceparent: headers.traceparent,
      tracestate: headers.tracestate,
      baggage: headers.baggage,
    }));
  const CONTEXT = { traceparent: TRACEPARENT, tracestate: 'vendor=opaque', baggage: 'tenant=acme' };

  it('leaves the baggage out when only tracecontext is named', async () => {
    const app = h.createApp({ config: { propagators: ['tracecontext'] } });
    await postGraphQL(app, '{ repositories(limit: 1) { total } }', undefined, CONTEXT);
    expect(sent()).toEqual([{ ...CONTEXT, baggage: undefined }]);
  });

  it('carries baggage without a trace, as W3C Baggage stands alone', async () => {
    await h.gql('{ repositories(limit: 1) { total } }', undefined, { baggage: 'tenant=acme' });
    expect(sent()).toEqual([
      { traceparent: undefined, tracestate: undefined, baggage: 'tenant=acme' },
    ]);
  });

  it('carries nothing with none', async () => {
    const app = h.createApp({ config: { propagators: [] } });
    await postGraphQL(app, '{ repositories(limit: 1) { total } }', undefined, CONTEXT);
    expect(sent()).toEqual([{ traceparent: undefined, tracestate: undefined, baggage: undefined }]);
  });
});
