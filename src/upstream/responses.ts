import { UpstreamError } from '../errors.js';
import { CircuitOpenError } from './breaker.js';
import type { Cancellation } from './cancel.js';
import { type Decoder, WireMismatch, wireError } from './wire.js';

// Every way a call can fail becomes one coded UpstreamError: docs/upstream.md#errors.

const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);
const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);
const MESSAGE_LIMIT = 500;

export function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** undici's maxResponseSize refusal, by Content-Length or while reading. */
export function isTooLarge(error: unknown): boolean {
  return (error as { code?: string } | undefined)?.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE';
}

export type Redact = (text: string) => string;

const REDACTED = '[redacted]';

// Any run of RUN characters of a secret's form is taken out; a form of MIN_RUN or fewer only
// whole, and a shorter one only as the secret itself, so that ordinary words stay.
const RUN = 8;
const MIN_RUN = 4;

const HTML_NAMED: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Lower-cased ASCII letters only, so that every index still points at the same character. */
const asciiLower = (text: string) => text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());

/** A secret as it is, and as URLs, HTML, JSON, hex and base64 write it. */
function formsOf(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const signs = /[^A-Za-z0-9]/gu;
  const forms = [
    secret,
    encodeURIComponent(secret),
    encodeURIComponent(encodeURIComponent(secret)),
    secret.replace(/[&<>"']/g, (sign) => HTML_NAMED[sign] ?? sign),
    secret.replace(signs, (sign) => `&#${sign.codePointAt(0)};`),
    secret.replace(signs, (sign) => `&#x${sign.codePointAt(0)?.toString(16)};`),
    JSON.stringify(secret).slice(1, -1).replaceAll('/', '\\/'),
    // Every byte percent-encoded, every UTF-16 unit a JSON \u escape: the encoders that escape all.
    [...bytes].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join(''),
    Array.from(
      { length: secret.length },
      (_, at) => `\\u${secret.charCodeAt(at).toString(16).padStart(4, '0')}`,
    ).join(''),
    bytes.toString('hex'),
  ];
  // A part of the secret reads differently in base64 at each of three starting bytes.
  for (const offset of [0, 1, 2]) {
    const part = bytes.subarray(offset);
    forms.push(part.toString('base64'), part.toString('base64url'));
  }
  return forms.filter((form, index) => index === 0 || form.length >= MIN_RUN);
}

/**
 * Each stretch of text made of runs of a secret's forms, in any case, becomes one `[redacted]`:
 * an upstream may quote its key encoded or cut (docs/upstream.md#errors).
 */
export function createRedact(secrets: ReadonlyArray<string | undefined>): Redact {
  const runs = new Map<number, Set<string>>();
  for (const secret of secrets) {
    if (!secret) continue;
    for (const form of formsOf(secret).map(asciiLower)) {
      const run = form.length > RUN ? RUN : form.length > MIN_RUN ? form.length - 1 : form.length;
      const known = runs.get(run) ?? new Set<string>();
      for (let at = 0; at + run <= form.length; at++) known.add(form.slice(at, at + run));
      runs.set(run, known);
    }
  }
  if (runs.size === 0) return (text) => text;
  return (text) => {
    const lower = asciiLower(text);
    let out = '';
    let kept = 0;
    let start = -1;
    let end = -1;
    for (let at = 0; at < text.length; at++) {
      for (const [run, known] of runs) {
        if (at + run > text.length || !known.has(lower.slice(at, at + run))) continue;
        // Runs that overlap or touch are one stretch.
        if (at > end) {
          if (start >= 0) {
            out += `${text.slice(kept, start)}${REDACTED}`;
            kept = end;
          }
          start = at;
        }
        end = Math.max(end, at + run);
      }
    }
    if (start < 0) return text;
    return `${out}${text.slice(kept, start)}${REDACTED}${text.slice(end)}`;
  };
}

/**
 * Redacted before it is cut to the bound, so that a secret across it leaves nothing; cut to twice
 * the bound first, so that the redaction's work does not grow with the body.
 */
export function errorMessage(status: number, text: string, redact: Redact): string {
  try {
    const parsed = wireError.safeParse(JSON.parse(text));
    const message = parsed.success ? (parsed.data.message ?? parsed.data.response) : undefined;
    if (message) return redact(message.slice(0, 2 * MESSAGE_LIMIT)).slice(0, MESSAGE_LIMIT);
  } catch {
    // A non-JSON error body may be an HTML page or a stack trace: never passed on.
  }
  return `The upstream answered ${status}`;
}

export function parseBody<T>(text: string, decode: Decoder<T>, status: number, redact: Redact): T {
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
    // The path may hold the upstream's own map keys, so it is redacted too.
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', {
      status,
      message: redact(
        `The upstream's answer does not match the spec at ${field}: ${error.message}`,
      ),
    });
  }
}

/** The abort reason of a call whose deadline passed. */
export class DeadlineError extends Error {
  override name = 'TimeoutError';
}

/** The error of a call whose GraphQL client went away: it says nothing of the upstream. */
export function cancelledError(): UpstreamError {
  const error = new UpstreamError('UPSTREAM_UNAVAILABLE', {
    message: 'The request was cancelled by the client',
  });
  error.cancelled = true;
  return error;
}

/**
 * A client that left is recognised first, whatever undici threw once the call was aborted, so
 * that it never counts as an upstream fault.
 */
export function toUpstreamError(
  error: unknown,
  signal: Cancellation,
  timeoutMs: number,
): UpstreamError {
  if (error instanceof UpstreamError) return error;
  const code = (error as { code?: string } | undefined)?.code ?? '';
  // By identity, not by name: a client's own abort reason may be named TimeoutError too.
  const deadlinePassed = signal.aborted && signal.reason instanceof DeadlineError;
  if (signal.aborted && !deadlinePassed) return cancelledError();
  if (deadlinePassed || TIMEOUT_CODES.has(code)) {
    return new UpstreamError('UPSTREAM_TIMEOUT', {
      message: `The upstream did not answer within ${timeoutMs} ms`,
    });
  }
  if (isTooLarge(error)) {
    return new UpstreamError('UPSTREAM_BAD_RESPONSE', {
      message: "The upstream's answer exceeds UPSTREAM_MAX_RESPONSE_BYTES",
    });
  }
  if (code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') return cutOff(undefined);
  if ((error as Error | undefined)?.name === 'AbortError' || code === 'UND_ERR_ABORTED') {
    // Not this call's cancellation: the pool itself was closed (shutdown).
    return new UpstreamError('UPSTREAM_UNAVAILABLE', {
      message: 'The upstream call was aborted',
    });
  }
  return new UpstreamError('UPSTREAM_UNAVAILABLE', {
    message: `The upstream could not be reached (${code || 'connection failed'})`,
  });
}

/** Headers came, the body did not finish: a transport fault. */
export function cutOff(status: number | undefined): UpstreamError {
  const error = new UpstreamError('UPSTREAM_BAD_RESPONSE', {
    ...(status === undefined ? {} : { status }),
    message: "The upstream's answer was cut off",
  });
  error.transportFault = true;
  return error;
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
  // Full jitter, so that many callers' retries do not come at once.
  return Math.random() * Math.min(2_000, 100 * 2 ** (attempt - 1));
}
