import { randomUUID } from 'node:crypto';
import { type ExecutionResult, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { acceptedRequestId, type RequestLogRecord, requestState } from '../request-state.js';
import { type Logger, logUnexpectedErrors, REQUEST_MESSAGE } from './logger.js';
import type { ClientIdentity, Metrics } from './metrics.js';

// A client name or version is a label, not a document: short, printable, or not kept.
const CLIENT_FIELD = /^[\x20-\x7e]{1,64}$/;
const clientField = (value: string | null) => {
  const trimmed = value?.trim();
  return trimmed && CLIENT_FIELD.test(trimmed) ? trimmed : undefined;
};

/** `apollographql-client-name` / `-version`, as Apollo Client and gateways send them. */
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
  const codes: string[] = [];
  for (const one of results) {
    const errors = [
      ...(one?.errors ?? []),
      ...(one?.incremental ?? []).flatMap((i) => i.errors ?? []),
    ];
    for (const error of errors) {
      const code = error.extensions?.code;
      codes.push(typeof code === 'string' ? code : 'INTERNAL_SERVER_ERROR');
    }
  }
  return codes;
}

export interface RequestLogOptions {
  logger: Logger;
  metrics: Metrics;
  /** Health, readiness and metrics scrapes: logged at debug, or they drown the request lines. */
  probePaths: readonly string[];
  /**
   * With trusted documents, the operation names they define: only these get a metrics label of
   * their own, so callers' own documents cannot take the bounded set of labels.
   */
  trustedOperationNames?: ReadonlySet<string> | undefined;
}

const UNTRUSTED_NAME = 'other';

/**
 * One JSON log line per request (request id, operation, status, duration, upstream calls,
 * error codes; never a header, a variable or a credential), the operation and error-code
 * metrics, and the `x-request-id` response header.
 */
export function useRequestLog({
  logger,
  metrics,
  probePaths,
  trustedOperationNames,
}: RequestLogOptions): Plugin<Context, ServerContext> {
  const probes = new Set(probePaths);
  // With trusted documents, a name outside the manifest would be a series of the caller's choosing.
  const trustedName = (name: string | undefined) =>
    trustedOperationNames && name !== undefined && !trustedOperationNames.has(name)
      ? UNTRUSTED_NAME
      : name;
  return {
    // The first stage: the request's record is made here, on the request's own server context.
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
      // Named from the document as soon as it parses, so refused operations are named too.
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
      state.executed.push({ type: operation?.operation, name: trustedName(name) });
      return {
        // An answer in parts outlives its response's headers: its line waits for the last part,
        // so the duration, upstream calls and error codes are the whole answer's.
        onExecuteDone({ result }) {
          // Before Yoga masks them (its masking runs after the plugins' hooks).
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
            onNext({ result: part }) {
              logUnexpectedErrors(logger, part.errors, context.requestId);
              state.codes.push(...errorCodes(part));
            },
            onEnd: () => ended(),
          };
        },
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
      const write = () => writeLine(state, request, response.status, requestId, hit);
      if (state.streamed) state.streamed.then(write);
      else write();
    },
  };

  function writeLine(
    state: RequestLogRecord,
    request: Request,
    status: number,
    requestId: string,
    hit: boolean,
  ) {
    const seconds = (performance.now() - state.started) / 1000;
    // A client that went away reads no answer: its errors (upstream calls cut short) are not
    // the facade's or the upstream's and must not show up as such.
    const cancelled = request.signal.aborted;
    if (!cancelled) metrics.countErrors(state.codes);
    // A response-cache hit ran no execution, yet it answered an operation like any other.
    const executed =
      hit && state.executed.length === 0
        ? [{ type: 'query', name: trustedName(state.operationName) }]
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
    if (probes.has(state.path)) logger.debug(line, 'probe');
    else if (status >= 500) logger.error(line, REQUEST_MESSAGE);
    else logger.info(line, REQUEST_MESSAGE);
  }
}
