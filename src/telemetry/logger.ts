import type { YogaLogger } from '@graphql-yoga/logger';
import { trace } from '@opentelemetry/api';
import { GraphQLError } from 'graphql';
import { type DestinationStream, type Logger, pino } from 'pino';
import type { Settings } from '../config/variables.js';
import { truncate } from '../errors.js';
import { REDACT } from './redaction.js';

export type { Logger } from 'pino';

// Every logged string is bounded: much of what a line holds can come from a caller (an
// operation name, an error message quoting a value), and a line is not a place for megabytes.
const MAX_STRING = 1_000;
const MAX_STACK = 4_000;
const MAX_ITEMS = 20;
const MAX_DEPTH = 4;

/** Strings cut, lists and objects shortened, plain data only; class instances (errors) are left to their serializer. */
function bounded(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return truncate(value, MAX_STRING);
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DEPTH) return '[nested]';
  if (Array.isArray(value)) {
    const items = value.slice(0, MAX_ITEMS).map((item) => bounded(item, depth + 1));
    if (value.length > MAX_ITEMS) items.push(`[${value.length - MAX_ITEMS} more]`);
    return items;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const out: Record<string, unknown> = {};
  let kept = 0;
  for (const [key, item] of Object.entries(value)) {
    if (kept++ === MAX_ITEMS) break;
    out[key] = bounded(item, depth + 1);
  }
  return out;
}

/** Whether `bounded` would change any of an object's values: a long string, a list or an object. */
function needsBounding(object: Record<string, unknown>): boolean {
  for (const key in object) {
    const value = object[key];
    if (typeof value === 'string' ? value.length > MAX_STRING : typeof value === 'object' && value)
      return true;
  }
  return false;
}

/** pino's error serializer, bounded: the message and stack of an error can quote a caller's value. */
function boundedError(error: unknown): unknown {
  const { stack, ...rest } = pino.stdSerializers.err(error as Error) as { stack?: unknown };
  const out = bounded(rest) as Record<string, unknown>;
  if (typeof stack === 'string') out.stack = truncate(stack, MAX_STACK);
  return out;
}

/** The active span's ids, in OpenTelemetry's log field names, so a log line joins its trace. */
function traceIds(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/**
 * JSON lines on stdout (or `destination`, for tests); the level comes from LOG_LEVEL. With
 * `withTraceIds` (spans are exported), each line written inside a span names its trace and span.
 */
export function createLogger(
  level: Settings['logLevel'] = 'info',
  destination?: DestinationStream,
  withTraceIds = false,
): Logger {
  const options = {
    ...(withTraceIds ? { mixin: traceIds } : {}),
    level,
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: boundedError },
    formatters: {
      level: (label: string) => ({ level: label }),
      log: (object: Record<string, unknown>) => {
        // Most lines (the request log's) hold short strings and numbers only: nothing to bound,
        // and no copy to make.
        if (!needsBounding(object)) return object;
        const out: Record<string, unknown> = {};
        for (const [key, value] of Object.entries(object)) out[key] = bounded(value);
        return out;
      },
    },
  };
  return pino(options, destination ?? stdoutDestination());
}

// How long an exit waits for stdout to take the last lines.
const FLUSH_LIMIT_MS = 1_000;

/**
 * stdout, written asynchronously to keep a write(2) per line off the request path; main.ts
 * flushes before exiting. A stdout that fails (a closed pipe: EPIPE) drops the lines from then on.
 * No `flushSync`, and a bounded `flush`: pino's destination retries a failed synchronous write
 * forever, so a synchronous flush at `fatal` or at exit would hang on a closed pipe.
 */
function stdoutDestination(): DestinationStream & { flush(done: () => void): void } {
  const stream = pino.destination({ dest: 1, sync: false });
  let pending = false;
  let failed = false;
  // After the last buffered line is written; never while one is still waiting.
  stream.on('drain', () => {
    pending = false;
  });
  stream.on('error', () => {
    failed = true;
    pending = false;
    // pino silences its destination after an EPIPE only; any other failure, the same way.
    stream.destroy();
  });
  return {
    write(line: string) {
      if (failed) return;
      pending = true;
      stream.write(line);
    },
    flush(done) {
      if (!pending) {
        done();
        return;
      }
      const finish = () => {
        clearTimeout(timer);
        stream.off('drain', finish);
        stream.off('error', finish);
        done();
      };
      // Destroyed, the destination leaves pino's exit hook nothing to write.
      const timer = setTimeout(() => {
        failed = true;
        stream.destroy();
        finish();
      }, FLUSH_LIMIT_MS);
      stream.once('drain', finish);
      stream.once('error', finish);
    },
  };
}

/** The message of the request log's lines (src/telemetry/use-request-log.ts). */
export const REQUEST_MESSAGE = 'request';

/** A logger that drops everything: the default of apps built by tests and tools. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

// Unexpected errors already logged with their request's id; Yoga's own line for them would repeat
// them without it.
const loggedUnexpected = new WeakSet<object>();

/**
 * An error that a resolver or decoder threw unexpected (no coded error of ours, no GraphQL error),
 * logged with its request's id before Yoga masks it to INTERNAL_SERVER_ERROR, which is all the
 * caller sees: the id in the caller's `x-request-id` leads to this line.
 */
export function logUnexpectedErrors(
  logger: Logger,
  errors: readonly GraphQLError[] | undefined,
  requestId: string,
): void {
  for (const error of errors ?? []) {
    const original = error.originalError;
    if (!original || original.name === 'GraphQLError' || loggedUnexpected.has(original)) continue;
    loggedUnexpected.add(original);
    logger.error(
      { err: original, requestId, path: error.path?.join('.') },
      truncate(original.message, MAX_STRING),
    );
  }
}

/**
 * Yoga's own logger, routed to pino. Yoga logs a masked error as the GraphQLError that wraps
 * it; the original (with its stack) is what helps whoever reads the log. A caller's mistake (a
 * refused request, a variable of the wrong type) is a debug line that names its kind and code
 * only: its message quotes the caller's values, which may be secrets or megabytes.
 */
export function yogaLogger(logger: Logger): YogaLogger {
  const child = logger.child({ component: 'yoga' });
  const write =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (...args: unknown[]): void => {
      const [first, ...rest] = args;
      if (first instanceof Error) {
        if (isCallerMistake(first)) {
          if (child.isLevelEnabled('debug')) {
            const code = (first as { extensions?: { code?: unknown } }).extensions?.code;
            child.debug({ errorType: first.name, code }, 'caller mistake (values not logged)');
          }
          return;
        }
        const err =
          first instanceof GraphQLError && first.originalError ? first.originalError : first;
        if (loggedUnexpected.has(err)) return;
        if (child.isLevelEnabled(level)) child[level]({ err }, truncate(err.message, MAX_STRING));
        return;
      }
      if (!child.isLevelEnabled(level)) return;
      child[level](truncate([first, ...rest].map(String).join(' '), MAX_STRING));
    };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}

/**
 * A refused request (CSRF, bad JSON, too large: a 4xx), or graphql-js's own error about the
 * request (a variable that does not coerce), which has no original error and no path. Already
 * counted in the request line and the metrics.
 */
function isCallerMistake(error: Error): boolean {
  const graphql = error as {
    extensions?: { http?: { status?: unknown } };
    originalError?: unknown;
    path?: unknown;
  };
  const status = graphql.extensions?.http?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return true;
  return (
    error.name === 'GraphQLError' && graphql.originalError == null && graphql.path === undefined
  );
}
