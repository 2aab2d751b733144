import { randomUUID } from 'node:crypto';
import events, { setMaxListeners } from 'node:events';
import type { Tracer } from '@opentelemetry/api';
import type { YogaInitialContext } from 'graphql-yoga';
import type { Config } from './config/load.js';
import type { CredentialPolicy } from './credentials.js';
import { createInFlight } from './read/join.js';
import { createLoaders, createPageCap, type Loaders } from './read/loaders.js';
import type { RangeCache, Stale } from './read/ranges.js';
import type { SharedRanges } from './read/ranges-redis.js';
import type { Refreshes } from './read/refresh.js';
import {
  acceptedRequestId,
  type OperationSpans,
  type RequestStateCarrier,
  requestState,
} from './request-state.js';
import type { OpenSubscription, Subscriptions } from './security/subscriptions.js';
import type { CacheLookup, Metrics } from './telemetry/metrics.js';
import { createPropagator, incomingTraceContext } from './telemetry/trace-context.js';
import { CallBudget } from './upstream/budget.js';
import type { CachePolicy } from './upstream/cache-policy.js';
import type { CallContext, CompletedCall, UpstreamClient } from './upstream/client.js';
import {
  createTxtLoader,
  createTxtResolver,
  type TxtLoader,
  type TxtLookupResult,
  type TxtResolver,
} from './upstream/dns.js';
import { createDnsWatches, type DnsWatches } from './upstream/dns-watch.js';
import type { DnsWatchStore } from './upstream/dns-watch-store.js';

/** What the facade adds to Yoga's own context for one operation. */
export interface RequestContext {
  config: Config;
  client: UpstreamClient;
  /** What every upstream call of this request carries: credentials, id, signal, budget. */
  call: CallContext;
  loaders: Loaders;
  /** One DNS query per host, each a unit of `call.budget`. */
  txtLookups: Pick<TxtLoader, 'load'>;
  /** The process's watched TXT names, shared by every subscriber. */
  dnsWatches: DnsWatches;
  /** This request's client opening a subscription, within its bounds; and the process stopping. */
  subscriptions: {
    open(field: string): OpenSubscription;
    readonly shutdown: AbortSignal;
  };
  requestId: string;
  upstreamCalls: CompletedCall[];
  /** The list ranges answered from the range cache, and the fields each served. */
  cachedRanges: Array<{
    policy: CachePolicy;
    fields?: readonly string[] | undefined;
    stale?: Stale | undefined;
  }>;
  /** A field read something with no cache policy (a DNS look-up): kept only under a static hint. */
  readsWithoutPolicy: { seen: boolean };
  /** Per operation, set before this context is built: a batch's operations each have their own. */
  operationSpans?: OperationSpans | undefined;
  cost?: { estimated: number; max: number } | undefined;
  /** Once the operation has executed: what the response cache keeps its result for. */
  cachePolicy?: CachePolicy | undefined;
}

/**
 * The object Yoga is handed with each HTTP request, which a batch's operation contexts inherit
 * from: a hook that may run before the context is built, or after a refusal, finds its fields
 * optional.
 */
export type ServerContext = RequestStateCarrier & Partial<RequestContext>;

/** One operation's context, as resolvers and the stages' operation hooks see it. */
export type Context = YogaInitialContext & ServerContext & RequestContext;

interface ContextDeps {
  config: Config;
  client: UpstreamClient;
  credentials: CredentialPolicy;
  metrics: Metrics;
  /** Set when spans are exported: the DNS look-ups get spans. */
  tracer?: Tracer | undefined;
  /** None: stale-while-revalidate is off. */
  refreshes?: Refreshes | undefined;
  /** None: every range is fetched. */
  ranges?: RangeCache | undefined;
  /** None: each process keeps its own ranges. */
  sharedRanges?: SharedRanges | undefined;
  watching: WatchingDeps;
}

interface WatchingDeps {
  subscriptions: Subscriptions;
  /** The keys a client's subscriptions count against (its own, and its address if unverified). */
  subscriberKeys: (request: Request, serverContext: unknown) => string[];
  /** Shared by the fleet; none: each process looks its watched names up alone. */
  dnsWatchStore?: DnsWatchStore | undefined;
}

/** What subscriptions read in each context: the process's watches, and the client's bounds. */
function watchingContext(
  config: Config,
  resolver: TxtResolver,
  metrics: Metrics,
  { subscriptions, subscriberKeys, dnsWatchStore }: WatchingDeps,
) {
  // The watches take their look-ups from the requests' resolver, within DNS_MAX_CONCURRENT.
  const dnsWatches = createDnsWatches({
    resolver,
    ...config.subscriptions,
    store: dnsWatchStore,
    onLookUp: () => metrics.countDnsWatchLookUp(),
  });
  return (initial: YogaInitialContext & ServerContext) => ({
    dnsWatches,
    subscriptions: {
      open: (field: string) => subscriptions.open(subscriberKeys(initial.request, initial), field),
      shutdown: subscriptions.shutdown,
    },
  });
}

/** Where node:events keeps an EventTarget's bound on listeners (0: any number). Not in its types. */
const MAX_LISTENERS: symbol = Reflect.get(events, 'kMaxEventTargetListeners');

/**
 * An upstream call adds one abort listener to the request's signal: the budget bounds them. The
 * server's own signal allows any number already (0), and setting a bound on it, through its Proxy,
 * is slow (docs/performance.md#what-was-tried).
 */
function boundListeners(signal: AbortSignal, count: number): void {
  if (signal instanceof EventTarget && Reflect.get(signal, MAX_LISTENERS) !== 0)
    setMaxListeners(count, signal);
}

/** Per request: a request id, what goes upstream of the caller's credentials, and fresh loaders. */
export function createContextFactory({
  config,
  client,
  credentials,
  metrics,
  tracer,
  refreshes,
  ranges,
  sharedRanges,
  watching,
}: ContextDeps) {
  const txtResolver = createTxtResolver(config.dns, tracer);
  const watchingOf = watchingContext(config, txtResolver, metrics, watching);
  const propagator = createPropagator(config.propagators);
  // Shared by every request: the upstream's page size, and the reads in flight to join.
  const pageCap = createPageCap();
  const inFlight = createInFlight(client, {
    enabled: config.joinUpstreamCalls,
    onJoin: (route) => metrics.countJoinedCall(route),
  });
  const onLookup = (route: string, result: CacheLookup) => metrics.countCacheLookup(route, result);
  return (initial: YogaInitialContext & ServerContext): RequestContext => {
    const { headers, signal } = initial.request;
    const requestId = acceptedRequestId(headers.get('x-request-id')) ?? randomUUID();
    const upstreamCalls: CompletedCall[] = [];
    const cachedRanges: RequestContext['cachedRanges'] = [];
    // One budget for the whole request, whatever the length of its batch.
    const state = requestState(initial);
    if (!state.budget) {
      state.budget = new CallBudget(config.maxUpstreamCalls);
      boundListeners(signal, config.maxUpstreamCalls + 10);
    }
    const call: CallContext = {
      authorization: credentials.upstreamAuthorization(headers),
      caller: credentials.callerCredential(headers),
      requestId,
      signal,
      onCall: (completed) => upstreamCalls.push(completed),
      budget: state.budget,
      trace: incomingTraceContext(propagator, headers),
      forwarded: credentials.forwardedHeaders(headers),
    };
    const readsWithoutPolicy = { seen: false };
    // Made by the first look-up. A method, not a getter: Yoga copies the context with
    // Object.assign, which would read a getter.
    let txtLoader: TxtLoader | undefined;
    const txtLookups = {
      load(host: string): Promise<TxtLookupResult> {
        // A DNS answer's TTL is the resolver's, not a policy of the upstream's.
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
        shared: sharedRanges,
        // A refresh's calls end within the upstream's deadline: past it, another process may try.
        refreshLeaseMs: config.upstream.timeoutMs,
        onLookup,
        onCachedRange: (hit, fields) =>
          cachedRanges.push({ policy: hit.policy, fields, stale: hit.stale }),
      }),
      txtLookups,
      ...watchingOf(initial),
      requestId,
      upstreamCalls,
      cachedRanges,
      readsWithoutPolicy,
    };
  };
}
