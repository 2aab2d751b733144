// The one typed record of an HTTP request that the stages share, the spans of an operation, and
// the request id a caller may choose.
import type { Context as OtelContext, Span } from '@opentelemetry/api';
import type { CachePolicy } from './cache/policy.js';
import type { ClientIdentity } from './telemetry/metrics.js';
import type { CallBudget } from './upstream/budget.js';
import type { CompletedCall } from './upstream/client.js';

export interface OperationSpans {
  operation: Span;
  /** The operation span's context: the parent of its phases. */
  context: OtelContext;
  validate?: Span;
}

/**
 * What the stages keep of one HTTP request, which the operations of a batch share: one typed record
 * that every stage reads and writes through requestState(). It rides on the server context Yoga is
 * handed with the request (ServerContext), not in a WeakMap keyed by the Request: a WeakMap's
 * ephemeron entries keep each request's context (and the upstream answers it holds) alive into the
 * old generation, which costs CPU and memory under load (docs/performance.md).
 */
export interface RequestState {
  /** The request log's record (src/telemetry/use-request-log.ts), from its first hook on. */
  log: RequestLogRecord | undefined;
  /**
   * MAX_UPSTREAM_CALLS for the whole request: Yoga builds one context per operation of a batch,
   * and a batch must not multiply the budget by its length.
   */
  budget: CallBudget | undefined;
  /** The answer shows `extensions.upstreamCalls` (outside production, or for DEBUG_TOKEN). */
  showsUpstreamCalls: boolean;
  /** APQ: each hash sent with its document, checked against it, until the document validates. */
  apqDocuments: Map<string, string> | undefined;
  /**
   * The policy of each operation answered so far, executed or kept by the response cache
   * (src/cache/use-cache-control.ts, src/cache/use-response-cache.ts).
   */
  operationPolicies: CachePolicy[] | undefined;
  /**
   * The answer's cache policy, the strictest of its operations' (src/cache/use-cache-control.ts);
   * undefined until its results are processed, and then `no-store` unless every one allows.
   */
  cachePolicy: CachePolicy | undefined;
  /**
   * Set when the answer holds kept data past its max-age (stale-while-revalidate or -if-error):
   * the age in seconds of its oldest, which its `Age` header states.
   */
  staleAge: number | undefined;
  /** Whether the response cache answered (a batch: its last operation), when it is on. */
  responseCache: 'hit' | 'miss' | undefined;
  /**
   * The upstream calls of each operation executed (a batch has several), whose rate-limit headers
   * the answer passes back (src/http/use-upstream-headers.ts).
   */
  upstreamCalls: Array<readonly CompletedCall[]> | undefined;
  /** What the facade's own rate limit counted of this request, for its RateLimit headers. */
  rateLimit: RateLimitState | undefined;
}

/** A budget's state after this request took from it: its quota and what is left. */
export interface RateLimitState {
  policies: Array<{
    name: string;
    quota: number;
    windowS: number;
    remaining: number;
    resetS: number;
  }>;
}

export interface RequestLogRecord {
  started: number;
  path: string;
  /** The caller's x-request-id, when it is one we accept. */
  incomingId: string | undefined;
  operationName: string | undefined;
  operationType: string | undefined;
  /** The executed operation's id and upstream calls, for its log line. */
  context: { requestId: string; upstreamCalls: readonly CompletedCall[] } | undefined;
  /** What the caller says it is (Apollo's client identity headers). */
  client: ClientIdentity;
  /** The operations executed (more than one in a batch), for the metrics. */
  executed: Array<{ type: string | undefined; name: string | undefined }>;
  codes: string[];
  /** Set for an answer sent in parts (@defer, @stream): settles when its last part is sent. */
  streamed: Promise<void> | undefined;
}

/**
 * What the facade keeps on the server context, the object Yoga is handed with each HTTP request
 * (node:http's `{ req, res }`, one per request; `yoga.fetch` makes one too). Every hook reaches it:
 * as `serverContext`, or as an operation's context, which is that object itself or, in a batch,
 * one that inherits from it.
 */
export interface RequestStateCarrier {
  requestState?: RequestState | undefined;
}

/**
 * This request's record, made on first use: whichever stage asks first, the others see it. The
 * request log asks in onRequest, on the request's own server context, so that a batch's
 * operations, whose contexts inherit from it, find the one record rather than make their own.
 */
export function requestState(carrier: RequestStateCarrier): RequestState {
  carrier.requestState ??= {
    log: undefined,
    budget: undefined,
    showsUpstreamCalls: false,
    apqDocuments: undefined,
    operationPolicies: undefined,
    cachePolicy: undefined,
    responseCache: undefined,
    staleAge: undefined,
    upstreamCalls: undefined,
    rateLimit: undefined,
  };
  return carrier.requestState;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The caller's x-request-id when it is one we pass on (short, no spaces or control bytes). */
export function acceptedRequestId(value: string | null): string | undefined {
  return value && REQUEST_ID.test(value) ? value : undefined;
}
