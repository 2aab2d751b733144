// The one typed record of an HTTP request that the stages share (requestState), and the request
// id a caller may choose.
import type { Context as OtelContext, Span } from '@opentelemetry/api';
import type { ClientIdentity } from './telemetry/metrics.js';
import type { CallBudget } from './upstream/budget.js';
import type { CachePolicy } from './upstream/cache-policy.js';
import type { CompletedCall } from './upstream/client.js';

export interface OperationSpans {
  operation: Span;
  /** The operation span's context: the parent of its phases. */
  context: OtelContext;
  validate?: Span;
}

/**
 * What the stages keep of one HTTP request, shared by a batch's operations. It rides on the server
 * context, not in a WeakMap keyed by the Request, whose entries keep each request's context alive
 * into the old generation (docs/performance.md).
 */
export interface RequestState {
  log: RequestLogRecord | undefined;
  /** MAX_UPSTREAM_CALLS for the whole request: a batch must not multiply it by its length. */
  budget: CallBudget | undefined;
  /** The answer shows `extensions.upstreamCalls` (outside production, or for DEBUG_TOKEN). */
  showsUpstreamCalls: boolean;
  /** APQ: each hash sent with its document, until the document validates. */
  apqDocuments: Map<string, string> | undefined;
  /** The policy of each operation answered so far, executed or kept by the response cache. */
  operationPolicies: CachePolicy[] | undefined;
  /** The strictest of its operations', once processed; `no-store` unless every one allows. */
  cachePolicy: CachePolicy | undefined;
  /** The age in seconds of the oldest stale data the answer holds: its `Age` header. */
  staleAge: number | undefined;
  /** Whether the response cache answered (a batch: its last operation), when it is on. */
  responseCache: 'hit' | 'miss' | undefined;
  /** The response cache's hash of the caller's credential and forwarded headers, once made. */
  cacheSession: string | undefined;
  /** The upstream calls of each operation executed, whose rate-limit headers are passed back. */
  upstreamCalls: Array<readonly CompletedCall[]> | undefined;
  /** What the facade's own rate limit counted, for its RateLimit headers. */
  rateLimit: RateLimitState | undefined;
  /** The operation is a subscription: its stream is answered as the client's protocol asks. */
  subscription: boolean;
}

/** A budget's state after this request took from it. */
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

/** The server context Yoga is handed with each HTTP request, or an operation's, inheriting it. */
export interface RequestStateCarrier {
  requestState?: RequestState | undefined;
}

/**
 * This request's record, made by whichever stage asks first. The request log asks in onRequest, on
 * the request's own server context, so that a batch's operations find the one record.
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
    cacheSession: undefined,
    staleAge: undefined,
    upstreamCalls: undefined,
    rateLimit: undefined,
    subscription: false,
  };
  return carrier.requestState;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The caller's x-request-id when it is one we pass on (short, no spaces or control bytes). */
export function acceptedRequestId(value: string | null): string | undefined {
  return value && REQUEST_ID.test(value) ? value : undefined;
}
