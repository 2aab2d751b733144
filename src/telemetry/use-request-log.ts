import { randomUUID } from 'node:crypto';
import { type ExecutionResult, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { acceptedRequestId, type RequestLogRecord, requestState } from '../request-state.js';
import { type Logger, logUnexpectedErrors } from './logger.js';
import type { ClientIdentity, Metrics } from './metrics.js';

// The line's fields are those docs/operations.md#logs lists: never a header, variable or secret.

// A client name or version is a label, not a document: short, printable, or not kept.
const CLIENT_FIELD = /^[\x20-\x7e]{1,64}$/;
const clientField = (value: string | null) => {
  const trimmed = value?.trim();
  return trimmed && CLIENT_FIELD.test(trimmed) ? trimmed : undefined;
};

function clientIdentity(headers: Headers): ClientIdentity {
  return {
    name: clientField(headers.get('apollographql-client-name')),
    version: clientField(headers.get('apollographql-client-version')),
  };
}

/** One part of an answer in parts: its own errors and those of its incremental entries. */
interface Part extends ExecutionResult {
  incremental?: ReadonlyArray<{ errors?: ExecutionResult['errors'] }>;
}

function errorCodes(result: unknown): string[] {
  const results = (Array.isArray(result) ? result : [result]) as Part[];
  return results.flatMap((one) =>
    [...(one?.errors ?? []), ...(one?.incremental ?? []).flatMap((i) => i.errors ?? [])].map(
      (error) => {
        const code = error.extensions?.code;
        return typeof code === 'string' ? code : 'INTERNAL_SERVER_ERROR';
      },
    ),
  );
}

export interface RequestLogOptions {
  logger: Logger;
  metrics: Metrics;
  /** Health, readiness and metrics scrapes: logged at debug, or they drown the request lines. */
  probePaths: readonly string[];
  /** With trusted documents, only the names they define get a metrics label of their own. */
  trustedOperationNames?: ReadonlySet<string> | undefined;
}

/** The operation name a metric may carry: with trusted documents, `other` outside them. */
function metricName(trusted: ReadonlySet<string> | undefined, name: string | undefined) {
  return trusted && name !== undefined && !trusted.has(name) ? 'other' : name;
}

/**
 * One JSON log line per request, the operation and error-code metrics, and the `x-request-id`
 * response header.
 */
export function useRequestLog(options: RequestLogOptions): Plugin<Context, ServerContext> {
  const { logger, trustedOperationNames } = options;
  return {
    onRequest({ request, url, serverContext }) {
      requestState(serverContext).log = {
        started: performance.now(),
        path: url.pathname,
        // For requests refused before a context (and its request id) exists.
        incomingId: acceptedRequestId(request.headers.get('x-request-id')),
        operationName: undefined,
        operationType: undefined,
        context: undefined,
        client: clientIdentity(request.headers),
        executed: [],
        codes: [],
        streamed: undefined,
      };
    },
    onParams({ params, context }) {
      const state = requestState(context).log;
      if (state) state.operationName ??= params.operationName ?? undefined;
    },
    onParse() {
      // Named as soon as the document parses, so refused operations are named too.
      return ({ result, context }) => {
        const state = requestState(context).log;
        if (!state || result instanceof Error || !result) return;
        const operation = getOperationAST(result, context.params?.operationName);
        state.operationName ??= operation?.name?.value;
        state.operationType ??= operation?.operation;
      };
    },
    onExecute({ args }) {
      const context = args.contextValue;
      const state = requestState(context).log;
      if (!state) return;
      state.context = context;
      const operation = getOperationAST(args.document, args.operationName);
      // Executed, so validated: a document that failed validation never names a series.
      const name = operation?.name?.value ?? args.operationName ?? undefined;
      state.executed.push({
        type: operation?.operation,
        name: metricName(trustedOperationNames, name),
      });
      return {
        onExecuteDone: ({ result }) => watchResult(logger, state, context, result),
      };
    },
    onResultProcess({ result, serverContext }) {
      const state = requestState(serverContext).log;
      if (state && !(Symbol.asyncIterator in result)) state.codes.push(...errorCodes(result));
    },
    onResponse({ request, response, serverContext }) {
      const { log: state, responseCache } = requestState(serverContext);
      if (!state) return;
      const requestId = state.context?.requestId ?? state.incomingId ?? randomUUID();
      response.headers.set('x-request-id', requestId);
      const hit = responseCache === 'hit';
      const write = () => writeLine(options, state, request, response.status, requestId, hit);
      if (state.streamed) state.streamed.then(write);
      else write();
    },
  };
}

/**
 * Logs unexpected errors before Yoga masks them. An answer in parts outlives its response's
 * headers: its line waits for the last part, so its duration and codes are the whole answer's.
 */
function watchResult(
  logger: Logger,
  state: RequestLogRecord,
  context: Context,
  result: ExecutionResult | AsyncIterable<ExecutionResult>,
) {
  if (!(Symbol.asyncIterator in result)) {
    logUnexpectedErrors(logger, result.errors, context.requestId);
    return undefined;
  }
  let ended = () => {};
  state.streamed = new Promise<void>((resolve) => {
    ended = resolve;
  });
  context.request.signal.addEventListener('abort', () => ended(), { once: true });
  return {
    onNext({ result: part }: { result: ExecutionResult }) {
      logUnexpectedErrors(logger, part.errors, context.requestId);
      state.codes.push(...errorCodes(part));
    },
    onEnd: () => ended(),
  };
}

function writeLine(
  { logger, metrics, probePaths, trustedOperationNames }: RequestLogOptions,
  state: RequestLogRecord,
  request: Request,
  status: number,
  requestId: string,
  hit: boolean,
) {
  const seconds = (performance.now() - state.started) / 1000;
  // A client that went away reads no answer: its errors are neither ours nor the upstream's.
  const cancelled = request.signal.aborted;
  if (!cancelled) metrics.countErrors(state.codes);
  // A response-cache hit ran no execution, yet it answered an operation like any other.
  const executed =
    hit && state.executed.length === 0
      ? [{ type: 'query', name: metricName(trustedOperationNames, state.operationName) }]
      : state.executed;
  for (const { type, name } of executed) {
    metrics.observeOperation(type, name, seconds);
    metrics.countClientOperation(state.client);
  }
  const calls = state.context?.upstreamCalls ?? [];
  const line = {
    requestId,
    method: request.method,
    // The path only: a GET's query string holds the document and its variables.
    path: state.path,
    status,
    durationMs: Math.round(seconds * 10_000) / 10,
    operationName: state.operationName,
    operationType: state.operationType ?? (hit ? 'query' : undefined),
    responseCache: hit ? 'hit' : undefined,
    clientName: state.client.name,
    clientVersion: state.client.version,
    upstreamCalls: calls.length,
    upstreamMs: Math.round(calls.reduce((sum, call) => sum + call.durationMs, 0) * 10) / 10,
    errors: state.codes.length > 0 ? state.codes : undefined,
    cancelled: cancelled || undefined,
  };
  if (probePaths.includes(state.path)) logger.debug(line, 'probe');
  else if (status >= 500) logger.error(line, 'request');
  else logger.info(line, 'request');
}
