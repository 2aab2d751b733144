import { type ErrorCode, UpstreamError } from '../errors.js';
import { CircuitOpenError } from './breaker.js';
import type { Cancellation } from './cancel.js';
import { type Decoder, WireMismatch, wireError } from './wire.js';

// How the client reads an upstream answer and turns every way a call can fail into one coded
// UpstreamError (the contract's table), and which of those are worth another try.

const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);
const TRANSPORT_CODES: Record<string, ErrorCode> = {
  UND_ERR_HEADERS_TIMEOUT: 'UPSTREAM_TIMEOUT',
  UND_ERR_BODY_TIMEOUT: 'UPSTREAM_TIMEOUT',
  UND_ERR_CONNECT_TIMEOUT: 'UPSTREAM_TIMEOUT',
  ETIMEDOUT: 'UPSTREAM_TIMEOUT',
};
const MESSAGE_LIMIT = 500;

export function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** undici's maxResponseSize refusal, by Content-Length or while reading. */
export function isTooLarge(error: unknown): boolean {
  return (error as { code?: string } | undefined)?.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE';
}

export function errorMessage(status: number, text: string): string {
  try {
    const parsed = wireError.safeParse(JSON.parse(text));
    const message = parsed.success ? (parsed.data.message ?? parsed.data.response) : undefined;
    if (message) return message.slice(0, MESSAGE_LIMIT);
  } catch {
    // A non-JSON error body may be an HTML page or a stack trace: never passed on.
  }
  return `The upstream answered ${status}`;
}

export function parseBody<T>(text: string, decode: Decoder<T>, status: number): T {
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', {
      status,
      message: 'The upstream answered with a body that is not JSON',
    });
  }
  try {
    return decode(json);
  } catch (error) {
    if (!(error instanceof WireMismatch)) throw error;
    const field = error.path.length ? error.path.join('.') : '(body)';
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', {
      status,
      message: `The upstream's answer does not match the spec at ${field}: ${error.message}`,
    });
  }
}

/** The abort reason of a call whose deadline passed. */
export class DeadlineError extends Error {
  override name = 'TimeoutError';
}

/** `signal` is the call's cancellation: its reason tells a deadline from a client that left. */
export function toUpstreamError(
  error: unknown,
  signal: Cancellation,
  timeoutMs: number,
): UpstreamError {
  if (error instanceof UpstreamError) return error;
  const code = (error as { code?: string } | undefined)?.code ?? '';
  const deadlinePassed =
    signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError';
  if (deadlinePassed || TRANSPORT_CODES[code] === 'UPSTREAM_TIMEOUT') {
    return new UpstreamError('UPSTREAM_TIMEOUT', {
      message: `The upstream did not answer within ${timeoutMs} ms`,
    });
  }
  if (isTooLarge(error)) {
    return new UpstreamError('UPSTREAM_BAD_RESPONSE', {
      message: "The upstream's answer exceeds UPSTREAM_MAX_RESPONSE_BYTES",
    });
  }
  if (code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') {
    return new UpstreamError('UPSTREAM_BAD_RESPONSE', {
      message: "The upstream's answer was cut off",
    });
  }
  if (
    signal.aborted ||
    (error as Error | undefined)?.name === 'AbortError' ||
    code === 'UND_ERR_ABORTED'
  ) {
    // The GraphQL client went away; nobody reads this, but it must still be an expected error.
    return new UpstreamError('UPSTREAM_UNAVAILABLE', {
      message: 'The request was cancelled by the client',
    });
  }
  return new UpstreamError('UPSTREAM_UNAVAILABLE', {
    message: `The upstream could not be reached (${code || 'connection failed'})`,
  });
}

/** Backoff before the next attempt, or undefined when this failure is not worth retrying. */
export function retryDelay(error: UpstreamError, attempt: number): number | undefined {
  if (error.cancelled || error instanceof CircuitOpenError) return undefined;
  const status = error.upstream.status;
  const retryable =
    status === undefined ? error.code === 'UPSTREAM_UNAVAILABLE' : RETRYABLE_STATUS.has(status);
  if (!retryable) return undefined;
  const retryAfter = error.extensions.retryAfter;
  if (typeof retryAfter === 'number') return retryAfter * 1000;
  // Full jitter: spreads the retries of many callers instead of synchronising them.
  return Math.random() * Math.min(2_000, 100 * 2 ** (attempt - 1));
}
