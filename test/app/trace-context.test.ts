import { describe, expect, it } from 'vitest';
import { upstreamRequests, useHarness } from '../helpers/harness.js';

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

  it("carries the caller's trace to every upstream call, each call a span of its own", async () => {
    const answer = await h.gql(TWO_CALLS, undefined, {
      traceparent: TRACEPARENT,
      tracestate: 'vendor=opaque',
      baggage: 'tenant=acme',
    });
    expect(answer.errors).toBeUndefined();
    const calls = sent();
    expect(calls).toHaveLength(2);
    const spans = new Set<string>();
    for (const call of calls) {
      const [version, traceId, spanId, flags] = (call.traceparent ?? '').split('-');
      expect({ version, traceId, flags }).toEqual({
        version: '00',
        traceId: TRACE_ID,
        flags: '01',
      });
      expect(spanId).toMatch(/^[\da-f]{16}$/);
      expect(spanId).not.toBe(CALLER_SPAN);
      spans.add(spanId as string);
      expect(call).toMatchObject({ tracestate: 'vendor=opaque', baggage: 'tenant=acme' });
    }
    expect(spans.size).toBe(2);
  });

  it("keeps the caller's sampling decision", async () => {
    await h.gql('{ repositories(limit: 1) { total } }', undefined, {
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-00`,
    });
    expect(sent()[0]?.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[\\da-f]{16}-00$`));
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
