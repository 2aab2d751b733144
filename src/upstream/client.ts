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
import type { Config } from '../config/load.js';
import { type ErrorCode, UpstreamError, upstreamHttpError } from '../errors.js';
import { injectTraceContext, type TraceContext } from '../telemetry/trace-context.js';
import { type BreakerState, createRouteBreakers, type RouteBreakers } from './breaker.js';
import type { CallBudget } from './budget.js';
import {
  type CachePolicy,
  type FreshnessHeaders,
  NO_STORE,
  parseCachePolicy,
  type StaleDefaults,
  withStale,
} from './cache-policy.js';
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

export interface UpstreamClientOptions extends UpstreamSettings {
  /** A path prefix is kept. */
  baseUrl: string;
  /** Tests replace the pool with a MockAgent for faults a real server cannot produce. */
  dispatcher?: Dispatcher;
  /** Told of every attempt, for metrics and request logs. */
  onCall?: (call: CompletedCall) => void;
  onBreakerChange?: (state: BreakerState, route: string) => void;
  /** Set when spans are exported: one client span per attempt. */
  tracer?: Tracer | undefined;
}

export interface CompletedCall {
  route: string;
  /** The HTTP status, a transport failure's code, or `cancelled`: the client went away first. */
  outcome: number | ErrorCode | 'cancelled';
  durationMs: number;
  requestId?: string | undefined;
  /** Shared by the retries of one logical call (per client). */
  callId: number;
  /** 1 for the first try, 2 for the first retry, ... */
  attempt: number;
  /** The resolver calls (loader keys) this call answered. */
  callers: number;
  /** Their field paths, when the request shows its upstream calls. */
  fields?: readonly string[] | undefined;
  /** Another request's call this one joined (src/read/join.ts). */
  joined?: boolean | undefined;
  /** Of a read that succeeded (docs/caching.md#where-a-fields-policy-comes-from). */
  cachePolicy?: CachePolicy | undefined;
  /** The answer's headers that go back to the caller, by lower-case name; undefined: none. */
  passedBack?: Readonly<Record<string, string>> | undefined;
}

/** What one GraphQL request brings to its upstream calls. */
export interface CallContext {
  /** The Authorization header to send, as the credential policy (src/credentials.ts) gave it. */
  authorization?: string | undefined;
  /** The caller's own credential, never sent: two callers' calls are never joined. */
  caller?: string | undefined;
  requestId?: string | undefined;
  /** Aborted when the GraphQL client goes away. */
  signal?: AbortSignal | undefined;
  onCall?: ((call: CompletedCall) => void) | undefined;
  /** Each logical call takes one unit, its retries included. */
  budget?: CallBudget | undefined;
  trace?: TraceContext | undefined;
  /** The caller's headers named by FORWARD_HEADERS, as they came. */
  forwarded?: Readonly<Record<string, string>> | undefined;
  /** How many resolver calls this call serves; default 1. */
  callers?: number | undefined;
  fields?: readonly string[] | undefined;
  /** The request shows its upstream calls (`extensions.upstreamCalls`): field paths are kept. */
  showCalls?: boolean | undefined;
}

/** Sent alike on every call of a route: an answer may vary on them and still be kept. */
const SAME_FOR_EVERY_CALL = new Set(['accept', 'accept-encoding', 'content-type']);

/** One call as it goes on the wire, built once for all its attempts. */
interface Outgoing<Out> {
  method: Endpoint<unknown, Out>['method'];
  /** Method and path template, never values: a metrics label, a span name, a circuit's key. */
  route: string;
  /** The path template under the base URL's prefix. */
  template: string;
  /** The template under the prefix, filled, with the query string. */
  path: string;
  body: string | null;
  decode: Decoder<Out> | null;
}

/** Sends any route of endpoints.ts (docs/upstream.md#timeouts-retries-and-the-breaker). */
export class UpstreamClient {
  readonly #options: UpstreamClientOptions;
  readonly #dispatcher: Dispatcher;
  readonly #origin: string;
  readonly #prefix: string;
  readonly #breakers: RouteBreakers;
  readonly #url: URL;
  readonly #redact: Redact;
  /** By route (`GET /git/v1/repo`). */
  readonly #maxAge: ReadonlyMap<string, CachePolicy>;
  readonly #stale = new Map<string, StaleDefaults>();
  readonly #passedBack: ReadonlySet<string>;
  #calls = 0;

  constructor(options: UpstreamClientOptions) {
    this.#options = options;
    this.#url = new URL(options.baseUrl);
    this.#origin = this.#url.origin;
    this.#prefix = this.#url.pathname.replace(/\/+$/, '');
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
   * Every failure is a coded UpstreamError, or UpstreamBudgetError past the budget. Retries are
   * part of the one logical call, for the budget and the deadline alike.
   */
  async send<In, Out>(endpoint: Endpoint<In, Out>, input: In, call: CallContext): Promise<Out> {
    // First: a path value refused is the caller's error, and costs no unit of the budget.
    const request = this.#outgoing(endpoint, input);
    call.budget?.take();
    const timeoutMs = this.#options[endpoint.timeout];
    const deadline = Date.now() + timeoutMs;
    const cancel = new CallCancel();
    const timer = setTimeout(() => cancel.abort(new DeadlineError()), timeoutMs);
    const onClientGone = () => cancel.abort(call.signal?.reason);
    if (call.signal?.aborted) onClientGone();
    else call.signal?.addEventListener('abort', onClientGone, { once: true });
    const attempts = endpoint.retry ? this.#options.retries + 1 : 1;
    const callId = ++this.#calls;
    // Not cockatiel's retry() and timeout(): its wait ignores the abort signal, its backoff cannot
    // see the deadline, and its timeout adds an AbortSignal per call (cancel.ts).
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
    ids: { callId: number; attempt: number },
  ): Promise<T> {
    const started = performance.now();
    const span = this.#options.tracer && this.#startSpan(request, call, ids.attempt);
    const sent = this.#headers(request, call, span);
    const completed: CompletedCall = {
      route: request.route,
      outcome: 'UPSTREAM_UNAVAILABLE',
      durationMs: 0,
      requestId: call.requestId,
      ...ids,
      callers: call.callers ?? 1,
      fields: call.fields,
      cachePolicy: undefined,
      passedBack: undefined,
    };
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
      completed.outcome = response.statusCode;
      completed.passedBack = pickHeaders(response.headers, this.#passedBack, this.#redact);
      const text = await readBody(response, cancel);
      if (response.statusCode < 200 || response.statusCode >= 300) {
        throw upstreamHttpError(
          response.statusCode,
          errorMessage(response.statusCode, text, this.#redact),
          header(response.headers['retry-after']),
        );
      }
      // Only a read's answer can be kept; a write's is one caller's outcome, once.
      if (request.method === 'GET')
        completed.cachePolicy = this.#cachePolicy(request.route, call, sent, response.headers);
      if (request.decode === null) return undefined as T;
      return parseBody(text, request.decode, response.statusCode, this.#redact);
    } catch (error) {
      if (isDefect(error, cancel)) throw error;
      const failure = toUpstreamError(error, cancel, timeoutMs);
      if (failure.cancelled) completed.outcome = 'cancelled';
      else if (failure.upstream.status === undefined) completed.outcome = failure.code;
      throw failure;
    } finally {
      completed.durationMs = performance.now() - started;
      if (span) endSpan(span, completed.outcome);
      this.#options.onCall?.(completed);
      call.onCall?.(completed);
    }
  }

  /** The answer's own policy, else UPSTREAM_CACHE_MAX_AGE's, with the route's stale windows. */
  #cachePolicy(
    route: string,
    call: CallContext,
    sent: Record<string, string>,
    headers: Dispatcher.ResponseData['headers'],
  ): CachePolicy | undefined {
    // A header it was not sent is one every caller's call lacks alike.
    const keyed = (name: string) =>
      !Object.hasOwn(sent, name) ||
      SAME_FOR_EVERY_CALL.has(name) ||
      name === 'authorization' ||
      (call.forwarded !== undefined && Object.hasOwn(call.forwarded, name));
    const declared =
      parseCachePolicy(headers as FreshnessHeaders, Date.now(), keyed) ?? this.#maxAge.get(route);
    return declared && withStale(declared, this.#stale.get(route));
  }

  /** Not @opentelemetry/instrumentation-undici's (docs/observability.md#the-spans-and-their-attributes). */
  #startSpan(request: Outgoing<unknown>, call: CallContext, attempt: number): Span {
    return (this.#options.tracer as Tracer).startSpan(
      request.route,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': request.method,
          'url.template': request.template,
          'server.address': this.#url.hostname,
          'server.port': Number(this.#url.port) || (this.#url.protocol === 'https:' ? 443 : 80),
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
    // The client span, when spans are exported, is the parent the upstream sees.
    if (span) propagation.inject(trace.setSpan(context.active(), span), headers);
    else if (call.trace) injectTraceContext(call.trace, headers);
    return headers;
  }
}

/** The size cap is undici's own; any other failure after the headers is an answer cut off. */
function readBody(response: Dispatcher.ResponseData, cancel: CallCancel): Promise<string> {
  return response.body.text().catch((error: unknown) => {
    const code = (error as { code?: string } | undefined)?.code;
    if (cancel.aborted || isTooLarge(error) || code === 'UND_ERR_BODY_TIMEOUT') throw error;
    throw cutOff(response.statusCode);
  });
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

/** An error with no code that no cancellation explains is ours (a decoder's bug). */
function isDefect(error: unknown, cancel: CallCancel): boolean {
  if (error instanceof UpstreamError || cancel.aborted) return false;
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  return typeof code !== 'string' && name !== 'AbortError';
}

function queryString(params: Readonly<Record<string, string | number | undefined>>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) query.set(name, String(value));
  }
  return query.size > 0 ? `?${query}` : '';
}
