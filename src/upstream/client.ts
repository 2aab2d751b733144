import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher } from 'undici';
import { z } from 'zod';
import type { Config } from '../config.js';
import { type ErrorCode, UpstreamError, upstreamHttpError } from '../errors.js';
import { type Breaker, CircuitOpenError, createBreaker } from './breaker.js';
import {
  type WireDevServerRequest,
  wireDevServer,
  wireDomainVerification,
  wireError,
  wireRepositoryList,
} from './wire.js';

type UpstreamSettings = Config['upstream'];

/** The upstream settings of config.ts (timeouts, pool, retries, breaker, key) and the wiring. */
export interface UpstreamClientOptions extends UpstreamSettings {
  /** Base URL without a trailing slash; a path prefix is kept. */
  baseUrl: string;
  /** Tests replace the pool with a MockAgent for faults a real server cannot produce. */
  dispatcher?: Dispatcher;
  /** Told of every upstream attempt, for metrics and request logs. */
  onCall?: (call: CompletedCall) => void;
}

export interface CompletedCall {
  route: string;
  /** HTTP status, or the error code of a transport failure. */
  outcome: number | ErrorCode;
  durationMs: number;
  requestId?: string | undefined;
}

/** What one GraphQL request brings to its upstream calls. */
export interface CallContext {
  authorization?: string | undefined;
  requestId?: string | undefined;
  /** Aborted when the GraphQL client goes away. */
  signal?: AbortSignal | undefined;
  /** Counts this request's upstream calls, for its log line. */
  onCall?: ((call: CompletedCall) => void) | undefined;
}

interface Send<T> {
  method: 'GET' | 'POST' | 'PUT';
  route: string;
  path: string;
  body?: unknown;
  schema: z.ZodType<T>;
  timeoutMs?: number;
}

const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);
const TRANSPORT_CODES: Record<string, ErrorCode> = {
  UND_ERR_HEADERS_TIMEOUT: 'UPSTREAM_TIMEOUT',
  UND_ERR_BODY_TIMEOUT: 'UPSTREAM_TIMEOUT',
  UND_ERR_CONNECT_TIMEOUT: 'UPSTREAM_TIMEOUT',
  ETIMEDOUT: 'UPSTREAM_TIMEOUT',
};
const MESSAGE_LIMIT = 500;

/**
 * The one HTTP client to the upstream: a keep-alive undici pool, a deadline per call, a cap on
 * answer size, retries for reads only, and the contract's status -> code mapping.
 */
export class UpstreamClient {
  readonly #options: UpstreamClientOptions;
  readonly #dispatcher: Dispatcher;
  readonly #origin: string;
  readonly #prefix: string;
  readonly #breaker: Breaker;

  constructor(options: UpstreamClientOptions) {
    this.#options = options;
    const url = new URL(options.baseUrl);
    this.#origin = url.origin;
    this.#prefix = url.pathname.replace(/\/+$/, '');
    this.#breaker = createBreaker(options.breakerThreshold, options.breakerCooldownMs);
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        connections: options.connections,
        keepAliveTimeout: 30_000,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
  }

  listRepositories(
    page: { limit?: number | undefined; offset?: number | undefined },
    call: CallContext,
  ) {
    const query = new URLSearchParams();
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.offset !== undefined) query.set('offset', String(page.offset));
    const search = query.size > 0 ? `?${query}` : '';
    return this.#send(
      {
        method: 'GET',
        route: 'GET /git/v1/repo',
        path: `/git/v1/repo${search}`,
        schema: wireRepositoryList,
      },
      call,
    );
  }

  createDomainVerification(domain: string, call: CallContext) {
    return this.#send(
      {
        method: 'POST',
        route: 'POST /domains/v1/verifications',
        path: '/domains/v1/verifications',
        body: { domain },
        schema: wireDomainVerification,
      },
      call,
    );
  }

  /** Resolves on any 2xx (the answer's body is not specified); throws UpstreamError otherwise. */
  async verifyDomain(domain: string, call: CallContext): Promise<void> {
    await this.#send(
      {
        method: 'PUT',
        route: 'PUT /domains/v1/verifications',
        path: '/domains/v1/verifications',
        body: { domain },
        schema: anyBody,
      },
      call,
    );
  }

  requestDevServer(body: WireDevServerRequest, call: CallContext) {
    return this.#send(
      {
        method: 'POST',
        route: 'POST /ephemeral/v1/dev-servers',
        path: '/ephemeral/v1/dev-servers',
        body,
        schema: wireDevServer,
        timeoutMs: this.#options.devServerTimeoutMs,
      },
      call,
    );
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }

  async #send<T>(request: Send<T>, call: CallContext): Promise<T> {
    const timeoutMs = request.timeoutMs ?? this.#options.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    // One controller per call for both the deadline and the client going away: cheaper on the
    // hot path than AbortSignal.timeout + AbortSignal.any, which showed in profiles.
    const controller = new AbortController();
    const signal = controller.signal;
    const timer = setTimeout(() => controller.abort(new DeadlineError()), timeoutMs);
    const onClientGone = () => controller.abort(call.signal?.reason);
    if (call.signal?.aborted) onClientGone();
    else call.signal?.addEventListener('abort', onClientGone, { once: true });
    // POST and PUT change state: never repeated behind the caller's back.
    const attempts = request.method === 'GET' ? this.#options.retries + 1 : 1;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.#breaker.run(() => this.#attempt(request, call, signal, timeoutMs));
        } catch (error) {
          const failure = toUpstreamError(error, signal, timeoutMs);
          const delay = retryDelay(failure, attempt);
          if (attempt >= attempts || delay === undefined || Date.now() + delay >= deadline)
            throw failure;
          await sleep(delay, undefined, { signal }).catch(() => {
            throw toUpstreamError(signal.reason, signal, timeoutMs);
          });
        }
      }
    } finally {
      clearTimeout(timer);
      call.signal?.removeEventListener('abort', onClientGone);
    }
  }

  async #attempt<T>(
    request: Send<T>,
    call: CallContext,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<T> {
    const started = performance.now();
    let outcome: number | ErrorCode = 'UPSTREAM_UNAVAILABLE';
    try {
      const response = await this.#dispatcher.request({
        origin: this.#origin,
        path: this.#prefix + request.path,
        method: request.method,
        headers: this.#headers(request, call),
        body: request.body === undefined ? null : JSON.stringify(request.body),
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      outcome = response.statusCode;
      const text = await readCapped(
        response.body,
        response.headers['content-length'],
        this.#options.maxResponseBytes,
      ).catch((error: unknown) => {
        // Headers came, the body did not finish: the answer was cut off, not refused.
        if (error instanceof UpstreamError || signal.aborted) throw error;
        throw new UpstreamError('UPSTREAM_BAD_RESPONSE', {
          status: response.statusCode,
          message: "The upstream's answer was cut off",
        });
      });
      if (response.statusCode < 200 || response.statusCode >= 300) {
        throw upstreamHttpError(
          response.statusCode,
          errorMessage(response.statusCode, text),
          header(response.headers['retry-after']),
        );
      }
      // The verify answer's body is not specified: any 2xx is the answer, whatever it holds.
      if (request.schema === anyBody) return undefined as T;
      return parseBody(text, request.schema, response.statusCode);
    } catch (error) {
      if (!(error instanceof UpstreamError) || error.upstream.status === undefined) {
        outcome = toUpstreamError(error, signal, timeoutMs).code;
      }
      throw error;
    } finally {
      const completed = {
        route: request.route,
        outcome,
        durationMs: performance.now() - started,
        requestId: call.requestId,
      };
      this.#options.onCall?.(completed);
      call.onCall?.(completed);
    }
  }

  #headers(request: Send<unknown>, call: CallContext): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const authorization = this.#options.apiKey
      ? `Bearer ${this.#options.apiKey}`
      : call.authorization;
    if (authorization) headers.authorization = authorization;
    if (call.requestId) headers['x-request-id'] = call.requestId;
    return headers;
  }
}

// Marks a route whose 2xx body is not specified (and so not parsed).
const anyBody = z.unknown();

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(error?: Error): void },
  contentLength: string | string[] | undefined,
  cap: number,
): Promise<string> {
  const tooLarge = () =>
    new UpstreamError('UPSTREAM_BAD_RESPONSE', {
      message: `The upstream's answer exceeds ${cap} bytes`,
    });
  if (Number(header(contentLength) ?? 0) > cap) {
    body.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > cap) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

function errorMessage(status: number, text: string): string {
  try {
    const parsed = wireError.safeParse(JSON.parse(text));
    const message = parsed.success ? (parsed.data.message ?? parsed.data.response) : undefined;
    if (message) return message.slice(0, MESSAGE_LIMIT);
  } catch {
    // A non-JSON error body may be an HTML page or a stack trace: never passed on.
  }
  return `The upstream answered ${status}`;
}

function parseBody<T>(text: string, schema: z.ZodType<T>, status: number): T {
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', {
      status,
      message: 'The upstream answered with a body that is not JSON',
    });
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.length ? issue.path.map(String).join('.') : '(body)';
  throw new UpstreamError('UPSTREAM_BAD_RESPONSE', {
    status,
    message: `The upstream's answer does not match the spec at ${field}: ${issue?.message ?? 'invalid'}`,
  });
}

/** The abort reason of a call whose deadline passed. */
class DeadlineError extends Error {
  override name = 'TimeoutError';
}

/** `signal` is the call's combined signal: its reason tells a deadline from a client that left. */
function toUpstreamError(error: unknown, signal: AbortSignal, timeoutMs: number): UpstreamError {
  if (error instanceof UpstreamError) return error;
  const code = (error as { code?: string } | undefined)?.code ?? '';
  const deadlinePassed =
    signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError';
  if (deadlinePassed || TRANSPORT_CODES[code] === 'UPSTREAM_TIMEOUT') {
    return new UpstreamError('UPSTREAM_TIMEOUT', {
      message: `The upstream did not answer within ${timeoutMs} ms`,
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
function retryDelay(error: UpstreamError, attempt: number): number | undefined {
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
