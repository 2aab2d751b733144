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
  const settle = () => span.end();
  let result: T;
  try {
    result = otelContext.with(trace.setSpan(parent, span), wrapped);
  } catch (error) {
    settle();
    throw error;
  }
  if (result instanceof Promise) {
    return result.finally(settle) as T;
  }
  settle();
  return result;
}

/**
 * The GraphQL spans under the server span: one per operation, named `query Name` once parsed,
 * with `graphql.parse`, `graphql.validate` and `graphql.execute` as its children; resolvers, and
 * the upstream client spans they cause, run inside `graphql.execute`. The document and variable
 * values are never recorded (an inline argument is a value too), only the operation's type and name.
 * Installed only when spans are exported.
 */
export function useTracing(
  tracing: Tracing,
  graphqlEndpoint: string,
): Plugin<Context, ServerContext> {
  const { tracer } = tracing;
  return {
    onRequest({ url }) {
      if (url.pathname === graphqlEndpoint) tracing.setHttpRoute(graphqlEndpoint);
    },
    instrumentation: {
      operation({ context }, wrapped) {
        const parent = otelContext.active();
        const operation = tracer.startSpan('graphql.operation', {}, parent);
        // On the operation's own object (one per operation of a batch), which Yoga hands to every
        // phase and later makes its context.
        context.operationSpans = {
          operation,
          context: trace.setSpan(parent, operation),
        };
        return within(operation, parent, wrapped);
      },
      parse({ context }, wrapped) {
        const spans = context.operationSpans;
        if (!spans) return wrapped();
        return within(tracer.startSpan('graphql.parse', {}, spans.context), spans.context, wrapped);
      },
      validate({ context }, wrapped) {
        const spans = context.operationSpans;
        if (!spans) return wrapped();
        spans.validate = tracer.startSpan('graphql.validate', {}, spans.context);
        return within(spans.validate, spans.context, wrapped);
      },
      execute({ context }, wrapped) {
        const spans = context.operationSpans;
        if (!spans) return wrapped();
        const execute = tracer.startSpan('graphql.execute', {}, spans.context);
        return within(execute, spans.context, wrapped);
      },
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
