import { randomFillSync } from 'node:crypto';

/**
 * The caller's W3C trace context (https://www.w3.org/TR/trace-context/), as this request carries
 * it to the upstream when no OpenTelemetry SDK runs. Without one, the caller's trace still reaches
 * the REST API: each upstream call gets a `traceparent` with the caller's trace id and a span id of
 * its own, so the API's spans join the caller's trace.
 */
export interface TraceContext {
  traceId: string;
  /** The caller's span: the parent of this request's work. */
  parentId: string;
  /** Two hex digits; the sampled bit is the caller's decision and is kept. */
  flags: string;
  tracestate: string | undefined;
  baggage: string | undefined;
}

// Version 00 exactly; a later version may append fields after the flags, which are ignored.
const TRACEPARENT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})(?:-|$)/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
// The limits the W3C specifications give receivers: longer values are dropped, not cut.
const MAX_TRACESTATE = 512;
const MAX_BAGGAGE = 8192;

/** The caller's trace context, or undefined when it sent none or one that is not valid. */
export function incomingTraceContext(headers: Headers): TraceContext | undefined {
  const traceparent = headers.get('traceparent');
  if (!traceparent) return undefined;
  const match = TRACEPARENT.exec(traceparent.trim().toLowerCase());
  if (!match) return undefined;
  const [, version, traceId, parentId, flags] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
  ];
  if (version === 'ff' || (version === '00' && traceparent.trim().length !== 55)) return undefined;
  if (traceId === ZERO_TRACE || parentId === ZERO_SPAN) return undefined;
  const tracestate = headers.get('tracestate') ?? undefined;
  const baggage = headers.get('baggage') ?? undefined;
  return {
    traceId,
    parentId,
    flags,
    tracestate: tracestate && tracestate.length <= MAX_TRACESTATE ? tracestate : undefined,
    baggage: baggage && baggage.length <= MAX_BAGGAGE ? baggage : undefined,
  };
}

// Random bytes are drawn a pool at a time: one draw per span id costs more than the rest of the
// propagation together.
const pool = Buffer.alloc(4096);
let used = pool.length;

/** A fresh, non-zero span id. */
export function newSpanId(): string {
  let id: string;
  do {
    if (used === pool.length) {
      randomFillSync(pool);
      used = 0;
    }
    id = pool.toString('hex', used, used + 8);
    used += 8;
  } while (id === ZERO_SPAN);
  return id;
}

/** The headers of one upstream call in the caller's trace: a child of the caller's span. */
export function childTraceHeaders(trace: TraceContext, headers: Record<string, string>): void {
  headers.traceparent = `00-${trace.traceId}-${newSpanId()}-${trace.flags}`;
  if (trace.tracestate) headers.tracestate = trace.tracestate;
  if (trace.baggage) headers.baggage = trace.baggage;
}
