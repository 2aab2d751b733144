import {
  type Context as OtelContext,
  context as otelContext,
  type Span,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { type ExecutionResult, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import type { Tracing } from './tracing.js';

/** Runs `wrapped` as `span`'s child context, and ends `span` when it has settled. */
function within<T>(span: Span, parent: OtelContext, wrapped: () => T): T {
  let result: T;
  try {
    result = otelContext.with(trace.setSpan(parent, span), wrapped);
  } catch (error) {
    span.end();
    throw error;
  }
  if (result instanceof Promise) return result.finally(() => span.end()) as T;
  span.end();
  return result;
}

/**
 * The GraphQL spans docs/observability.md#the-spans-and-their-attributes lists. Never the
 * document or a variable value: an inline argument is a value too.
 */
export function useTracing(
  tracing: Tracing,
  graphqlEndpoint: string,
): Plugin<Context, ServerContext> {
  const { tracer } = tracing;
  const phase = <T>(name: string, { operationSpans: spans }: Context, wrapped: () => T): T =>
    spans ? within(tracer.startSpan(name, {}, spans.context), spans.context, wrapped) : wrapped();
  return {
    onRequest({ url }) {
      if (url.pathname === graphqlEndpoint) tracing.setHttpRoute(graphqlEndpoint);
    },
    instrumentation: {
      operation({ context }, wrapped) {
        const parent = otelContext.active();
        const operation = tracer.startSpan('graphql.operation', {}, parent);
        // One per operation of a batch: Yoga hands this object to every phase as its context.
        context.operationSpans = { operation, context: trace.setSpan(parent, operation) };
        return within(operation, parent, wrapped);
      },
      parse: ({ context }, wrapped) => phase('graphql.parse', context, wrapped),
      validate({ context }, wrapped) {
        const spans = context.operationSpans;
        if (!spans) return wrapped();
        spans.validate = tracer.startSpan('graphql.validate', {}, spans.context);
        return within(spans.validate, spans.context, wrapped);
      },
      execute: ({ context }, wrapped) => phase('graphql.execute', context, wrapped),
    },
    onParse() {
      return ({ result, context }) => {
        const spans = context.operationSpans;
        if (!spans || !result || result instanceof Error) return;
        const operation = getOperationAST(result, context.params?.operationName);
        if (!operation) return;
        const name = operation.name?.value;
        spans.operation.updateName(name ? `${operation.operation} ${name}` : operation.operation);
        spans.operation.setAttribute('graphql.operation.type', operation.operation);
        if (name) spans.operation.setAttribute('graphql.operation.name', name);
      };
    },
    onValidate({ context }) {
      return ({ valid }) => {
        const span = context.operationSpans?.validate;
        if (!valid) span?.setStatus({ code: SpanStatusCode.ERROR });
      };
    },
    onExecutionResult({ result, context }) {
      const spans = context.operationSpans;
      if (!spans || !result || Symbol.asyncIterator in result) return;
      const codes = (result as ExecutionResult).errors?.map((error) =>
        String(error.extensions?.code ?? 'INTERNAL_SERVER_ERROR'),
      );
      if (!codes?.length) return;
      spans.operation.setAttribute('graphql.error.codes', [...new Set(codes)]);
      spans.operation.setStatus({ code: SpanStatusCode.ERROR });
    },
  };
}
