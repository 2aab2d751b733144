import {
  type Context,
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
export const PROPAGATORS = ['tracecontext', 'baggage'] as const;
export type PropagatorName = (typeof PROPAGATORS)[number];

/**
 * The caller's trace context as OpenTelemetry's propagators read it from the request, with the
 * propagator that writes it again on each upstream call.
 */
export interface TraceContext {
  context: Context;
  propagator: TextMapPropagator;
}

/** OpenTelemetry's own W3C propagators, those `OTEL_PROPAGATORS` names (none: an empty list). */
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

/** The caller's trace context, or undefined when it sent none the propagator accepts. */
export function incomingTraceContext(
  propagator: TextMapPropagator,
  headers: Headers,
): TraceContext | undefined {
  const context = propagator.extract(ROOT_CONTEXT, headers, fromHeaders);
  return context === ROOT_CONTEXT ? undefined : { context, propagator };
}

/**
 * The headers of one upstream call when no SDK runs: the caller's context as it came, as
 * OpenTelemetry's API passes it through without an SDK (no span of the facade's exists to be a
 * parent, so none is named).
 */
export function injectTraceContext(trace: TraceContext, headers: Record<string, string>): void {
  trace.propagator.inject(trace.context, headers, defaultTextMapSetter);
}
