import {
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type TextMapGetter,
  type TextMapPropagator,
} from '@opentelemetry/api';
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';

/** The propagators built in, as `OTEL_PROPAGATORS` names them. */
export type PropagatorName = 'tracecontext' | 'baggage';

/** A request's headers, and what of its trace context goes on each of its upstream calls. */
export interface TraceContext {
  readonly headers: Headers;
  readonly propagator: TextMapPropagator;
  /** Worked out on the request's first upstream call, the same for every call. */
  outgoing?: Record<string, string>;
}

/** OpenTelemetry's W3C propagators, those `OTEL_PROPAGATORS` names. */
export function createPropagator(names: readonly PropagatorName[]): TextMapPropagator {
  return new CompositePropagator({
    propagators: names.map((name) =>
      name === 'tracecontext' ? new W3CTraceContextPropagator() : new W3CBaggagePropagator(),
    ),
  });
}

const fromHeaders: TextMapGetter<Headers> = {
  keys: (headers) => [...headers.keys()],
  get: (headers, key) => headers.get(key) ?? undefined,
};

/** The request's trace context, read only if the request makes an upstream call. */
export function incomingTraceContext(
  propagator: TextMapPropagator,
  headers: Headers,
): TraceContext {
  return { headers, propagator };
}

/**
 * Without an SDK the caller's context passes through as it came, on every call of the request
 * (docs/observability.md#trace-context-always).
 */
export function injectTraceContext(trace: TraceContext, headers: Record<string, string>): void {
  if (!trace.outgoing) {
    trace.outgoing = {};
    const context = trace.propagator.extract(ROOT_CONTEXT, trace.headers, fromHeaders);
    trace.propagator.inject(context, trace.outgoing, defaultTextMapSetter);
  }
  Object.assign(headers, trace.outgoing);
}
