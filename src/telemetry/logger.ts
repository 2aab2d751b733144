import type { YogaLogger } from '@graphql-yoga/logger';
import { trace } from '@opentelemetry/api';
import { GraphQLError } from 'graphql';
import { type DestinationStream, type Logger, pino } from 'pino';
import type { Settings } from '../config/variables.js';
import { truncate } from '../errors.js';

export type { Logger } from 'pino';

// Exact paths only: wildcard paths make redaction walk every logged object on every request.
const REDACT = [
  'authorization',
  'cookie',
  'token',
  'apiKey',
  'headers.authorization',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
];

// Every logged string is bounded, whatever the line is built from (docs/operations.md#logs).
const MAX_STRING = 1_000;
const MAX_STACK = 4_000;
const MAX_ITEMS = 20;
const MAX_DEPTH = 4;

/** Plain data only: class instances (errors) are left to their serializer. */
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

/** Whether `bounded` would change any of an object's values. */
function needsBounding(object: Record<string, unknown>): boolean {
  for (const key in object) {
    const value = object[key];
    if (typeof value === 'string' ? value.length > MAX_STRING : typeof value === 'object' && value)
      return true;
  }
  return false;
}

/** pino's error serializer, bounded. */
function boundedError(error: unknown): unknown {
  const { stack, ...rest } = pino.stdSerializers.err(error as Error) as { stack?: unknown };
  const out = bounded(rest) as Record<string, unknown>;
  if (typeof stack === 'string') out.stack = truncate(stack, MAX_STACK);
  return out;
}

/** The active span's ids, in OpenTelemetry's log field names. */
function traceIds(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** JSON lines on stdout (or `destination`, for tests); `withTraceIds` when spans are exported. */
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
 * stdout, written asynchronously. A stdout that fails (a closed pipe) drops the lines from then
 * on; never `flushSync`: pino retries a failed synchronous write forever, and the exit would hang.
 */
function stdoutDestination(): DestinationStream & { flush(done: () => void): void } {
  const stream = pino.destination({ dest: 1, sync: false });
  let pending = false;
  let failed = false;
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

/** The default of apps built by tests and tools. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

// Logged with their request's id: Yoga's own line for them would repeat them without it.
const loggedUnexpected = new WeakSet<object>();

/** Errors none of ours explains, logged with their request's id before Yoga masks them. */
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
 * Yoga's own logger, routed to pino: a masked error is logged as its original, and a caller's
 * mistake as a debug line without its message, which quotes the caller's values.
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

/** A refused request (a 4xx), or graphql-js's error about the request: no original, no path. */
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
