import type { YogaLogger } from '@graphql-yoga/logger';
import { GraphQLError } from 'graphql';
import { type DestinationStream, type Logger, pino } from 'pino';
import type { Config } from '../config.js';

export type { Logger } from 'pino';

// Belt and braces: no log line is built from headers, but if one ever is, these never show.
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

/** JSON lines on stdout (or `destination`, for tests); the level comes from LOG_LEVEL. */
export function createLogger(
  level: Config['logLevel'] = 'info',
  destination?: DestinationStream,
): Logger {
  const options = {
    level,
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  // Asynchronous writes keep a write(2) per request line off the request path; main.ts flushes
  // before the process exits, or the last lines are lost.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}

/** A logger that drops everything: the default of apps built by tests and tools. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * Yoga's own logger, routed to pino. Yoga logs a masked error as the GraphQLError that wraps
 * it; the original (with its stack) is what helps whoever reads the log.
 */
export function yogaLogger(logger: Logger): YogaLogger {
  const child = logger.child({ component: 'yoga' });
  const write =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (...args: unknown[]): void => {
      const [first, ...rest] = args;
      if (first instanceof Error) {
        const err =
          first instanceof GraphQLError && first.originalError ? first.originalError : first;
        // A refused request (CSRF, bad JSON, too large) is the caller's mistake, already counted
        // in the request line and the metrics: an `error` line with a stack would cry wolf.
        const at = isClientError(first) && level === 'error' ? 'debug' : level;
        if (child.isLevelEnabled(at)) child[at]({ err }, err.message);
        return;
      }
      if (!child.isLevelEnabled(level)) return;
      child[level]([first, ...rest].map(String).join(' '));
    };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}

function isClientError(error: Error): boolean {
  const status = (error as { extensions?: { http?: { status?: unknown } } }).extensions?.http
    ?.status;
  return typeof status === 'number' && status >= 400 && status < 500;
}
