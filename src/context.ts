import { randomUUID } from 'node:crypto';
import type { Tracer } from '@opentelemetry/api';
import type { YogaInitialContext } from 'graphql-yoga';
import { createInFlight } from './cache/join.js';
import type { CachePolicy } from './cache/policy.js';
import type { RangeCache, Stale } from './cache/ranges.js';
import type { Refreshes } from './cache/refresh.js';
import type { Config } from './config.js';
import { type CredentialPolicy, createCredentialPolicy } from './credentials.js';
import {
  acceptedRequestId,
  type OperationSpans,
  type RequestStateCarrier,
  requestState,
} from './request-state.js';
import type { CacheLookup } from './telemetry/metrics.js';
import { createPropagator, incomingTraceContext } from './telemetry/trace-context.js';
import { CallBudget } from './upstream/budget.js';
import type { CallContext, CompletedCall, UpstreamClient } from './upstream/client.js';
import {
  createTxtLoader,
  createTxtResolver,
  type TxtLoader,
  type TxtLookupResult,
  type TxtResolver,
} from './upstream/dns.js';
import { createLoaders, createPageCap, type Loaders } from './upstream/loaders.js';

/** What the facade adds to Yoga's own context for one request. */
export interface RequestContext {
  config: Config;
  client: UpstreamClient;
  /** This request's credentials, id and abort signal, passed to every upstream call it makes. */
  call: CallContext;
  loaders: Loaders;
  /** This request's TXT look-ups, one DNS query per host, each a unit of `call.budget`. */
  txtLookups: Pick<TxtLoader, 'load'>;
  requestId: string;
  /** The upstream calls this request made, for its log line and tests. */
  upstreamCalls: CompletedCall[];
  /**
   * The list ranges answered from the range cache (src/cache/ranges.ts): the lifetime
   * each had left, and the fields it served when the request shows its calls.
   */
  cachedRanges: Array<{
    policy: CachePolicy;
    fields?: readonly string[] | undefined;
    stale?: Stale | undefined;
  }>;
  /**
   * A field read something that has no cache policy of its own (a DNS look-up): the answer is
   * kept by no one unless a static hint covers it (src/cache/hints.ts).
   */
  readsWithoutPolicy: { seen: boolean };
  /**
   * This operation's spans, when spans are exported (src/telemetry/use-tracing.ts). Per operation,
   * not per request: a batch's operations each have their own. Set before this context is built,
   * on the same object.
   */
  operationSpans?: OperationSpans | undefined;
  /** This operation's estimated cost and MAX_COST (src/security/use-cost.ts), once computed. */
  cost?: { estimated: number; max: number } | undefined;
  /**
   * This operation's cache policy once it has executed (src/cache/use-cache-control.ts): what the
   * response cache keeps its result for.
   */
  cachePolicy?: CachePolicy | undefined;
}

/**
 * Yoga's server context: the object it is handed with each HTTP request, which becomes the
 * context of a single operation (a batch's operations each get one that inherits from it). It
 * carries the request's record; an operation's own fields are there once its context is built,
 * and a hook that may run before (onParams, onExecutionResult) or after a refusal finds them
 * optional.
 */
export type ServerContext = RequestStateCarrier & Partial<RequestContext>;

/** One operation's context, as resolvers and the stages' operation hooks see it. */
export type Context = YogaInitialContext & ServerContext & RequestContext;

export interface ContextDeps {
  config: Config;
  client: UpstreamClient;
  /** Default: one built from `config.dns`, shared by the app's requests. */
  txtResolver?: TxtResolver;
  /** Set when spans are exported: the DNS look-ups get spans. */
  tracer?: Tracer | undefined;
  /** Told of every upstream call a request joined rather than sent, by route, for metrics. */
  onJoin?: ((route: string) => void) | undefined;
  /** Told of every look-up in the kept ranges, by route and what it found, for metrics. */
  onCacheLookup?: ((route: string, result: CacheLookup) => void) | undefined;
  /** Where kept ranges past their max-age are refreshed; none: stale-while-revalidate is off. */
  refreshes?: Refreshes | undefined;
  /** The list ranges kept per caller; none: every range is fetched. */
  ranges?: RangeCache | undefined;
  /** Default: one built from `config`. */
  credentials?: CredentialPolicy | undefined;
}

function requestBudget(initial: RequestStateCarrier, limit: number): CallBudget {
  const state = requestState(initial);
  state.budget ??= new CallBudget(limit);
  return state.budget;
}

/** Per request: a request id, what goes upstream of the caller's credentials, and fresh loaders. */
export function createContextFactory({
  config,
  client,
  tracer,
  txtResolver = createTxtResolver(config.dns, tracer),
  onJoin,
  onCacheLookup,
  refreshes,
  ranges,
  credentials = createCredentialPolicy(config),
}: ContextDeps) {
  const propagator = createPropagator(config.propagators);
  // What the upstream's short answers taught about its page size, for every request's plans.
  const pageCap = createPageCap();
  // The reads in flight, shared by this app's requests whose upstream inputs are the same.
  const inFlight = createInFlight(client, { enabled: config.joinUpstreamCalls, onJoin });
  return (initial: YogaInitialContext & ServerContext): RequestContext => {
    const { headers, signal } = initial.request;
    const requestId = acceptedRequestId(headers.get('x-request-id')) ?? randomUUID();
    const upstreamCalls: CompletedCall[] = [];
    const cachedRanges: RequestContext['cachedRanges'] = [];
    const call: CallContext = {
      authorization: credentials.upstreamAuthorization(headers),
      caller: credentials.callerCredential(headers),
      requestId,
      signal,
      onCall: (completed) => upstreamCalls.push(completed),
      budget: requestBudget(initial, config.maxUpstreamCalls),
      trace: incomingTraceContext(propagator, headers),
      forwarded: credentials.forwardedHeaders(headers),
    };
    const readsWithoutPolicy = { seen: false };
    // Its DataLoader is made by the first look-up: most requests make none. A method, not a
    // getter, since Yoga copies the context with Object.assign, which would read a getter.
    let txtLoader: TxtLoader | undefined;
    const txtLookups = {
      load(host: string): Promise<TxtLookupResult> {
        // What DNS answers is never kept: its TTL is the resolver's, not a policy of the upstream's.
        readsWithoutPolicy.seen = true;
        txtLoader ??= createTxtLoader(txtResolver, { signal, budget: call.budget });
        return txtLoader.load(host);
      },
    };
    return {
      config,
      client,
      call,
      loaders: createLoaders(inFlight, call, {
        maxCoalescedRange: config.maxCoalescedRange,
        pageCap,
        ranges,
        refreshes,
        onLookup: onCacheLookup,
        onCachedRange: (hit, fields) =>
          cachedRanges.push({ policy: hit.policy, fields, stale: hit.stale }),
      }),
      txtLookups,
      requestId,
      upstreamCalls,
      cachedRanges,
      readsWithoutPolicy,
    };
  };
}
