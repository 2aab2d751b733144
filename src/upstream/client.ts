import {
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { Agent, type Dispatcher } from 'undici';
import {
  type CachePolicy,
  type FreshnessHeaders,
  NO_STORE,
  parseCachePolicy,
  type StaleDefaults,
  withStale,
} from '../cache/policy.js';
import type { Config } from '../config.js';
import { type ErrorCode, UpstreamError, upstreamHttpError } from '../errors.js';
import { injectTraceContext, type TraceContext } from '../telemetry/trace-context.js';
import { type BreakerState, createRouteBreakers, type RouteBreakers } from './breaker.js';
import type { CallBudget } from './budget.js';
import { CallCancel } from './cancel.js';
import { type Endpoint, fillPath } from './endpoints.js';
import { passedBackNames, pickHeaders } from './response-headers.js';
import {
  createRedact,
  cutOff,
  DeadlineError,
  errorMessage,
  header,
  isTooLarge,
  parseBody,
  type Redact,
  retryDelay,
  toUpstreamError,
} from './responses.js';
import type { Decoder } from './wire.js';

type UpstreamSettings = Config['upstream'];

/** The upstream settings of config.ts (timeouts, pool, retries, breaker, key) and the wiring. */
export interface UpstreamClientOptions extends UpstreamSettings {
  /** Base URL without a trailing slash; a path prefix is kept. */
  baseUrl: string;
  /** Tests replace the pool with a MockAgent for faults a real server cannot produce. */
  dispatcher?: Dispatcher;
  /** Told of every upstream attempt, for metrics and request logs. */
  onCall?: (call: CompletedCall) => void;
  /** Told of every change of a route's circuit breaker, for metrics. */
  onBreakerChange?: (state: BreakerState, route: string) => void;
  /** Set when spans are exported: one client span per attempt. */
  tracer?: Tracer | undefined;
}

export interface CompletedCall {
  route: string;
  /**
   * HTTP status, the error code of a transport failure, or `cancelled` when the GraphQL client
   * went away first (which says nothing of the upstream).
   */
  outcome: number | ErrorCode | 'cancelled';
  durationMs: number;
  requestId?: string | undefined;
  /** The logical call this attempt belongs to: its retries share the number (per client). */
  callId: number;
  /** 1 for the first try of a logical call, 2 for its first retry, ... */
  attempt: number;
  /** The resolver calls (loader keys) this call answered; more than one when pages were shared. */
  callers: number;
  /** What each of those callers was, when the request asked to see its upstream calls. */
  fields?: readonly string[] | undefined;
  /** Another request's call this request joined (src/cache/join.ts), under its request id. */
  joined?: boolean | undefined;
  /**
   * Of a read that succeeded: how long its answer may be kept (the upstream's Cache-Control or
   * Expires, else UPSTREAM_CACHE_MAX_AGE for its route); undefined when neither says.
   */
  cachePolicy?: CachePolicy | undefined;
  /**
   * The answer's headers that go back to the caller (src/upstream/response-headers.ts), by
   * lower-case name; undefined when it had none of them.
   */
  passedBack?: Readonly<Record<string, string>> | undefined;
}

/** What one GraphQL request brings to its upstream calls. */
export interface CallContext {
  /** The Authorization header to send: the credential policy's (src/credentials.ts), as given. */
  authorization?: string | undefined;
  /**
   * The caller's own credential (src/credentials.ts), never sent: calls of two callers are never
   * joined, even when the service key sends them alike.
   */
  caller?: string | undefined;
  requestId?: string | undefined;
  /** Aborted when the GraphQL client goes away. */
  signal?: AbortSignal | undefined;
  /** Counts this request's upstream calls, for its log line. */
  onCall?: ((call: CompletedCall) => void) | undefined;
  /** What this request (or this piece of it) may still call; each logical call takes one unit. */
  budget?: CallBudget | undefined;
  /** The caller's W3C trace context, carried to every upstream call. */
  trace?: TraceContext | undefined;
  /** The caller's headers named by FORWARD_HEADERS, passed on as they came. */
  forwarded?: Readonly<Record<string, string>> | undefined;
  /** How many resolver calls this call serves (a loader's merged or de-duplicated keys); default 1. */
  callers?: number | undefined;
  /** The fields behind those callers, when the request shows its upstream calls. */
  fields?: readonly string[] | undefined;
  /** The request shows its upstream calls (`extensions.upstreamCalls`): field paths are kept. */
  showCalls?: boolean | undefined;
}

/**
 * What the client sends alike on every call of a route, so an answer may vary on it: with the
 * credential and the forwarded headers, what a cache key holds (a `Vary` naming anything else
 * keeps nothing; src/cache/policy.ts).
 */
const SAME_FOR_EVERY_CALL = new Set(['accept', 'accept-encoding', 'content-type']);

/** One call as it goes on the wire, built once for all its attempts. */
interface Outgoing<Out> {
  method: Endpoint<unknown, Out>['method'];
  /** Method and path template: the route's name in metrics and spans, and its circuit's key. */
  route: string;
  /** The path template under the base URL's prefix, for spans. */
  template: string;
  /** The path to request: the template under the prefix, filled, with the query string. */
  path: string;
  body: string | null;
  decode: Decoder<Out> | null;
}

/**
 * The one HTTP client to the upstream: it sends any route of endpoints.ts through `send`, over a
 * keep-alive undici pool, with a deadline per call, a cap on answer size, retries for the reads
 * that declare them, a circuit per route, and the contract's status -> code mapping.
 */
export class UpstreamClient {
  readonly #options: UpstreamClientOptions;
  readonly #dispatcher: Dispatcher;
  readonly #origin: string;
  readonly #prefix: string;
  readonly #breakers: RouteBreakers;
  readonly #server: { address: string; port: number };
  readonly #redact: Redact;
  /** UPSTREAM_CACHE_MAX_AGE by route (`GET /git/v1/repo`). */
  readonly #maxAge: ReadonlyMap<string, CachePolicy>;
  /** UPSTREAM_STALE_WHILE_REVALIDATE and UPSTREAM_STALE_IF_ERROR by route. */
  readonly #stale = new Map<string, StaleDefaults>();
  /** The response headers passed back to the caller: the built-in and UPSTREAM_RESPONSE_HEADERS. */
  readonly #passedBack: ReadonlySet<string>;
  #calls = 0;

  constructor(options: UpstreamClientOptions) {
    this.#options = options;
    const url = new URL(options.baseUrl);
    this.#server = {
      address: url.hostname,
      port: Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
    };
    this.#origin = url.origin;
    this.#prefix = url.pathname.replace(/\/+$/, '');
    // Of the facade's secrets, the key is the one the upstream is sent and so may quote back.
    this.#redact = createRedact([options.apiKey]);
    this.#passedBack = new Set(passedBackNames(options.responseHeaders));
    this.#maxAge = new Map(
      Object.entries(options.cacheMaxAge ?? {}).map(([path, maxAge]) => [
        `GET ${path}`,
        maxAge > 0 ? { maxAge, scope: 'PUBLIC' } : NO_STORE,
      ]),
    );
    for (const [path, seconds] of Object.entries(options.staleWhileRevalidate ?? {}))
      this.#stale.set(`GET ${path}`, { staleWhileRevalidate: seconds });
    for (const [path, seconds] of Object.entries(options.staleIfError ?? {}))
      this.#stale.set(`GET ${path}`, { ...this.#stale.get(`GET ${path}`), staleIfError: seconds });
    this.#breakers = createRouteBreakers(
      options.breakerThreshold,
      options.breakerCooldownMs,
      options.onBreakerChange,
    );
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        connections: options.connections,
        keepAliveTimeout: 30_000,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        maxResponseSize: options.maxResponseBytes,
      });
  }

  /**
   * Calls one route of endpoints.ts with `input` and resolves with its decoded answer; every
   * failure is a coded UpstreamError (src/errors.ts), or UpstreamBudgetError past the budget. One
   * logical call: its retries are part of it, for the budget and the deadline alike.
   */
  async send<In, Out>(endpoint: Endpoint<In, Out>, input: In, call: CallContext): Promise<Out> {
    // A path value refused is the caller's error, and costs no unit of the budget.
    const request = this.#outgoing(endpoint, input);
    // Past the budget no call starts, and its retries are part of it.
    call.budget?.take();
    const timeoutMs = this.#options[endpoint.timeout];
    const deadline = Date.now() + timeoutMs;
    // One cancellation per call for both the deadline and the client going away.
    const cancel = new CallCancel();
    const timer = setTimeout(() => cancel.abort(new DeadlineError()), timeoutMs);
    const onClientGone = () => cancel.abort(call.signal?.reason);
    if (call.signal?.aborted) onClientGone();
    else call.signal?.addEventListener('abort', onClientGone, { once: true });
    // A write is never repeated behind the caller's back (the Endpoint type allows no retry).
    const attempts = endpoint.retry ? this.#options.retries + 1 : 1;
    const callId = ++this.#calls;
    // Retries and the deadline are this loop, not cockatiel's retry() and timeout() (the breaker
    // is cockatiel's): cockatiel's wait between attempts ignores the abort signal, so a client that
    // leaves during a Retry-After wait would be held to the wait's end, which then starts one more
    // (cancelled) attempt; its backoff and filter cannot see the call's deadline; and its timeout
    // gives undici an AbortSignal per call, the listeners that CallCancel avoids.
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.#breakers.run(request.route, () =>
            this.#attempt(request, call, cancel, timeoutMs, { callId, attempt }),
          );
        } catch (failure) {
          // Anything but an UpstreamError is a defect of ours: reported, never retried.
          if (!(failure instanceof UpstreamError)) throw failure;
          const delay = retryDelay(failure, attempt);
          if (attempt >= attempts || delay === undefined || Date.now() + delay >= deadline)
            throw failure;
          await cancel.sleep(delay).catch(() => {
            throw toUpstreamError(cancel.reason, cancel, timeoutMs);
          });
        }
      }
    } finally {
      clearTimeout(timer);
      call.signal?.removeEventListener('abort', onClientGone);
    }
  }

  #outgoing<In, Out>(endpoint: Endpoint<In, Out>, input: In): Outgoing<Out> {
    const template = this.#prefix + endpoint.path;
    const path = this.#prefix + fillPath(endpoint, input);
    const body = endpoint.body?.(input);
    return {
      method: endpoint.method,
      // The route names the endpoint, never its path values or query string (a metrics label, a
      // span name and the circuit breaker's key).
      route: `${endpoint.method} ${endpoint.path}`,
      template,
      path: endpoint.query ? path + queryString(endpoint.query(input)) : path,
      body: body === undefined ? null : JSON.stringify(body),
      decode: endpoint.decode,
    };
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }

  /** One HTTP exchange; it throws only coded UpstreamErrors, which the breaker judges. */
  async #attempt<T>(
    request: Outgoing<T>,
    call: CallContext,
    cancel: CallCancel,
    timeoutMs: number,
    { callId, attempt }: { callId: number; attempt: number },
  ): Promise<T> {
    const started = performance.now();
    const span = this.#options.tracer && this.#startSpan(request, call, attempt);
    let outcome: CompletedCall['outcome'] = 'UPSTREAM_UNAVAILABLE';
    let cachePolicy: CachePolicy | undefined;
    let passedBack: CompletedCall['passedBack'];
    const sent = this.#headers(request, call, span);
    try {
      const response = await this.#dispatcher.request({
        origin: this.#origin,
        path: request.path,
        method: request.method,
        headers: sent,
        body: request.body,
        signal: cancel,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      outcome = response.statusCode;
      passedBack = pickHeaders(response.headers, this.#passedBack);
      // The size cap is undici's own (maxResponseSize): it refuses a large Content-Length up
      // front and counts the bytes of a body without one.
      const text = await response.body.text().catch((error: unknown) => {
        const code = (error as { code?: string } | undefined)?.code;
        if (cancel.aborted || isTooLarge(error) || code === 'UND_ERR_BODY_TIMEOUT') throw error;
        // Headers came, the body did not finish: the answer was cut off, not refused.
        throw cutOff(response.statusCode);
      });
      if (response.statusCode < 200 || response.statusCode >= 300) {
        throw upstreamHttpError(
          response.statusCode,
          errorMessage(response.statusCode, text, this.#redact),
          header(response.headers['retry-after']),
        );
      }
      // Only a read's answer can be kept; a write's is one caller's outcome, once.
      if (request.method === 'GET') {
        // A header it was not sent is one every caller's call lacks alike.
        const keyed = (header: string) =>
          !Object.hasOwn(sent, header) ||
          SAME_FOR_EVERY_CALL.has(header) ||
          header === 'authorization' ||
          (call.forwarded !== undefined && Object.hasOwn(call.forwarded, header));
        const declared =
          parseCachePolicy(response.headers as FreshnessHeaders, Date.now(), keyed) ??
          this.#maxAge.get(request.route);
        cachePolicy = declared && withStale(declared, this.#stale.get(request.route));
      }
      // A route whose answer is not specified: any 2xx is the answer, whatever it holds.
      if (request.decode === null) return undefined as T;
      return parseBody(text, request.decode, response.statusCode, this.#redact);
    } catch (error) {
      if (isDefect(error, cancel)) throw error;
      const failure = toUpstreamError(error, cancel, timeoutMs);
      if (failure.cancelled) outcome = 'cancelled';
      else if (failure.upstream.status === undefined) outcome = failure.code;
      throw failure;
    } finally {
      const completed: CompletedCall = {
        route: request.route,
        outcome,
        durationMs: performance.now() - started,
        requestId: call.requestId,
        callId,
        attempt,
        callers: call.callers ?? 1,
        fields: call.fields,
        cachePolicy,
        passedBack,
      };
      if (span) endSpan(span, outcome);
      this.#options.onCall?.(completed);
      call.onCall?.(completed);
    }
  }

  /**
   * Written here rather than by @opentelemetry/instrumentation-undici: that one names a span after
   * the method and records the full URL (ids and query included), and cannot know the attempt or
   * how many resolver calls one request served, which only this client knows.
   */
  #startSpan(request: Outgoing<unknown>, call: CallContext, attempt: number): Span {
    return (this.#options.tracer as Tracer).startSpan(
      request.route,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': request.method,
          'url.template': request.template,
          'server.address': this.#server.address,
          'server.port': this.#server.port,
          'facade.upstream.attempt': attempt,
          'facade.upstream.callers': call.callers ?? 1,
          ...(attempt > 1 ? { 'http.request.resend_count': attempt - 1 } : {}),
        },
      },
      context.active(),
    );
  }

  #headers(request: Outgoing<unknown>, call: CallContext, span?: Span): Record<string, string> {
    // First, so nothing the facade sets for the call can be replaced by a caller's header.
    const headers: Record<string, string> = { ...call.forwarded, accept: 'application/json' };
    if (request.body !== null) headers['content-type'] = 'application/json';
    if (call.authorization) headers.authorization = call.authorization;
    if (call.requestId) headers['x-request-id'] = call.requestId;
    // With an SDK the client span is the parent the upstream sees; without one, the caller's span.
    if (span) propagation.inject(trace.setSpan(context.active(), span), headers);
    else if (call.trace) injectTraceContext(call.trace, headers);
    return headers;
  }
}

function endSpan(span: Span, outcome: CompletedCall['outcome']): void {
  if (typeof outcome === 'number') {
    span.setAttribute('http.response.status_code', outcome);
    if (outcome >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
    if (outcome >= 400) span.setAttribute('error.type', String(outcome));
  } else {
    span.setAttribute('error.type', outcome);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** An error with no code that no cancellation explains is ours (a decoder's bug), not the upstream's. */
function isDefect(error: unknown, cancel: CallCancel): boolean {
  if (error instanceof UpstreamError || cancel.aborted) return false;
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  return typeof code !== 'string' && name !== 'AbortError';
}

/** `?name=value&...` of the values given, or '' when none is. */
function queryString(params: Readonly<Record<string, string | number | undefined>>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) query.set(name, String(value));
  }
  return query.size > 0 ? `?${query}` : '';
}
