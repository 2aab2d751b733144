import { promises as dnsPromises } from 'node:dns';
import { context, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import DataLoader from 'dataloader';
import { LRUCache } from 'lru-cache';
import { ConfigError } from '../config.js';
import { FacadeError, UpstreamBudgetError } from '../errors.js';
import type { CallContext } from './client.js';
import { type DnsServer, parseServer, queryTxt } from './txt-query.js';

// c-ares's Resolver: queries go out on its own sockets and answer through the event loop, unlike
// dns.lookup(), which occupies a libuv thread-pool slot (shared with fs and crypto) per call.
const { Resolver } = dnsPromises;

/** Every way a TXT look-up can end; none of them is an exception. */
export type TxtLookupResult =
  /** `ttlS`: how long the answer may be kept, when the look-up read it (seconds). */
  | { outcome: 'found'; values: string[]; ttlS?: number | undefined }
  /** NXDOMAIN: the name does not exist (yet). */
  | { outcome: 'no-such-name' }
  /** The name exists but has no TXT record. */
  | { outcome: 'no-record' }
  | { outcome: 'timeout' }
  | { outcome: 'refused' }
  /** Any other failure, with c-ares's code (ESERVFAIL, ECONNREFUSED, EBADRESP, ...). */
  | { outcome: 'failed'; code: string };

export interface TxtResolver {
  /**
   * Every DNS outcome is a result; it rejects only with RATE_LIMITED, when DNS_MAX_CONCURRENT
   * look-ups are in flight and this one was not started. The signal abandons the look-up (the
   * request went away).
   */
  resolveTxt(host: string, signal?: AbortSignal): Promise<TxtLookupResult>;
  /** The budget of one look-up, all tries together. */
  readonly timeoutMs: number;
}

export interface TxtResolverOptions {
  /** `host[:port]` entries as Resolver#setServers takes them; undefined: the system's. */
  servers?: string[] | undefined;
  /** Total for all tries. */
  timeoutMs: number;
  tries: number;
  /** Look-ups in flight in the process (DNS_MAX_CONCURRENT). */
  maxConcurrent: number;
  /** DNS_CACHE_MAX_TTL_S: the longest a found answer is kept; 0 keeps none. */
  cacheMaxTtlS?: number | undefined;
  /** DNS_CACHE_ENTRIES: the most names whose answers are kept at once. */
  cacheEntries?: number | undefined;
}

const BY_CODE: Record<string, TxtLookupResult> = {
  ENOTFOUND: { outcome: 'no-such-name' },
  ENODATA: { outcome: 'no-record' },
  ETIMEOUT: { outcome: 'timeout' },
  EREFUSED: { outcome: 'refused' },
};

/**
 * Created once per app, so its bound on look-ups in flight holds for the process. A bad server
 * list throws a ConfigError naming DNS_SERVERS here, at start, rather than at the first look-up:
 * the config's pattern admits host names, which c-ares refuses.
 */
export function createTxtResolver(
  {
    servers,
    timeoutMs,
    tries,
    maxConcurrent,
    cacheMaxTtlS = 0,
    cacheEntries = 10_000,
  }: TxtResolverOptions,
  tracer?: Tracer,
): TxtResolver {
  // The contract splits the budget evenly over the tries. c-ares stretches later tries (and, in
  // 1.34, rounds its timers up), so the deadline below is what actually bounds a look-up.
  const options = { timeout: Math.max(1, Math.floor(timeoutMs / tries)), tries };
  let configured: string[] | undefined;
  if (servers) {
    try {
      const probe = new Resolver(options);
      probe.setServers(servers);
      configured = probe.getServers();
    } catch (error) {
      throw new ConfigError(
        `DNS_SERVERS: ${(error as Error).message} (resolvers must be IP addresses, host[:port])`,
      );
    }
  }
  // Answers are kept only for their TTL, which c-ares does not give for TXT: a look-up whose
  // answer may be kept is asked on the wire (txt-query.ts), of the same servers, c-ares's or the
  // system's; c-ares still answers what UDP cannot carry.
  const keeps = cacheMaxTtlS > 0 && cacheEntries > 0;
  const wireServers = keeps ? (configured ?? new Resolver().getServers()).map(parseServer) : [];

  /** c-ares's look-up; `cancelled` abandons it (deadline or request gone). */
  async function askCares(host: string, cancelled: AbortSignal): Promise<TxtLookupResult> {
    // One channel per look-up: cancel() cancels everything on a channel, and only this look-up
    // may be abandoned at its deadline. A fresh channel also has an empty cache (c-ares caches
    // answers, NXDOMAIN included), so "what is published now" is never a stale answer.
    const resolver = new Resolver(options);
    if (configured) resolver.setServers(configured);
    const cancel = () => resolver.cancel();
    cancelled.addEventListener('abort', cancel, { once: true });
    try {
      const records = await resolver.resolveTxt(host);
      // A TXT record may come in several character-strings (each at most 255 bytes): one value.
      return { outcome: 'found', values: records.map((chunks) => chunks.join('')) };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'UNKNOWN';
      return BY_CODE[code] ?? { outcome: 'failed', code };
    } finally {
      cancelled.removeEventListener('abort', cancel);
    }
  }

  const resolver: TxtResolver = {
    timeoutMs,
    async resolveTxt(host, signal) {
      if (signal?.aborted) return { outcome: 'failed', code: 'ECANCELLED' };
      const cancelled = new AbortController();
      let timedOut = false;
      const deadline = setTimeout(() => {
        timedOut = true;
        cancelled.abort();
      }, timeoutMs);
      const abort = () => cancelled.abort();
      signal?.addEventListener('abort', abort, { once: true });
      try {
        const onWire =
          wireServers.length > 0
            ? await askOnWire(host, wireServers, options, cancelled.signal)
            : 'truncated';
        const result = onWire === 'truncated' ? await askCares(host, cancelled.signal) : onWire;
        return timedOut ? { outcome: 'timeout' } : result;
      } finally {
        clearTimeout(deadline);
        signal?.removeEventListener('abort', abort);
      }
    },
  };
  const shared = bounded(tracer ? traced(resolver, tracer) : resolver, maxConcurrent);
  return keeps ? kept(shared, cacheMaxTtlS, cacheEntries) : shared;
}

/**
 * A look-up on the wire, as c-ares makes it: each try asks each server in turn, each query
 * bounded by its share of the time; a REFUSED or SERVFAIL moves on to the next server. An answer
 * too large for UDP is `truncated`: c-ares asks again, over TCP.
 */
async function askOnWire(
  host: string,
  servers: readonly DnsServer[],
  { timeout, tries }: { timeout: number; tries: number },
  cancelled: AbortSignal,
): Promise<TxtLookupResult | 'truncated'> {
  let last: TxtLookupResult = { outcome: 'timeout' };
  for (let attempt = 0; attempt < tries * servers.length; attempt++) {
    const server = servers[attempt % servers.length] as DnsServer;
    try {
      const answer = await queryTxt(server, host, timeout, cancelled);
      if (answer.truncated) return 'truncated';
      if (answer.rcode === 0) {
        return answer.values.length > 0
          ? { outcome: 'found', values: answer.values, ttlS: answer.ttlS }
          : { outcome: 'no-record' };
      }
      if (answer.rcode === 3) return { outcome: 'no-such-name' };
      last = answer.rcode === 5 ? { outcome: 'refused' } : failedRcode(answer.rcode);
      // One server says the same again.
      if (servers.length === 1) return last;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'UNKNOWN';
      if (code === 'ECANCELLED' || code === 'EBADNAME') return { outcome: 'failed', code };
      last = BY_CODE[code] ?? { outcome: 'failed', code };
    }
  }
  return last;
}

/** c-ares's code for a response code the contract gives no meaning of its own. */
function failedRcode(rcode: number): TxtLookupResult {
  const codes: Record<number, string> = { 1: 'EFORMERR', 2: 'ESERVFAIL', 4: 'ENOTIMP' };
  return { outcome: 'failed', code: codes[rcode] ?? 'EBADRESP' };
}

/**
 * Found answers kept for their TTL, at most `maxTtlS`, for at most `entries` names (the least
 * recently used go first); per resolver, so per set of servers. A failure, NXDOMAIN or "no TXT record" is
 * never kept: a name the caller is about to publish must be seen as soon as it is, and a
 * resolver that failed once may answer the next time. A kept answer still counts as a look-up
 * in its request's MAX_UPSTREAM_CALLS, so that what a request may do does not depend on what
 * others asked before it.
 */
function kept(resolver: TxtResolver, maxTtlS: number, entries: number): TxtResolver {
  const answers = new LRUCache<string, string[]>({ max: entries, ttl: maxTtlS * 1000 });
  return {
    timeoutMs: resolver.timeoutMs,
    async resolveTxt(host, signal) {
      const hit = answers.get(host);
      if (hit) return { outcome: 'found', values: hit };
      const result = await resolver.resolveTxt(host, signal);
      if (result.outcome === 'found' && result.ttlS) {
        answers.set(host, result.values, { ttl: Math.min(result.ttlS, maxTtlS) * 1000 });
      }
      return result;
    },
  };
}

/**
 * At most `max` look-ups in flight; one more is refused at once, not queued. Against a resolver
 * that never answers, every look-up holds a channel and a socket for DNS_TIMEOUT_MS: a queue
 * would hold the requests (and their connections) instead, and the caller could not tell.
 */
function bounded(resolver: TxtResolver, max: number): TxtResolver {
  let inFlight = 0;
  return {
    timeoutMs: resolver.timeoutMs,
    async resolveTxt(host, signal) {
      if (inFlight >= max) {
        throw new FacadeError(
          'RATE_LIMITED',
          'Too many DNS look-ups in progress (DNS_MAX_CONCURRENT); try again in a moment',
          { retryAfter: 1 },
        );
      }
      inFlight += 1;
      // The inner resolver settles once, on an answer, at its deadline or when cancelled.
      try {
        return await resolver.resolveTxt(host, signal);
      } finally {
        inFlight -= 1;
      }
    },
  };
}

/** One client span per look-up: the name asked and how it ended (a DNS outcome is no error). */
function traced(resolver: TxtResolver, tracer: Tracer): TxtResolver {
  return {
    timeoutMs: resolver.timeoutMs,
    async resolveTxt(host, signal) {
      const span = tracer.startSpan(
        'dns TXT',
        {
          kind: SpanKind.CLIENT,
          attributes: { 'dns.question.name': host, 'dns.question.type': 'TXT' },
        },
        context.active(),
      );
      const result = await resolver.resolveTxt(host, signal);
      span.setAttribute('facade.dns.outcome', result.outcome);
      if (result.outcome === 'found') span.setAttribute('facade.dns.values', result.values.length);
      if (
        result.outcome === 'timeout' ||
        result.outcome === 'refused' ||
        result.outcome === 'failed'
      )
        span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      return result;
    },
  };
}

export type TxtLoader = DataLoader<string, TxtLookupResult>;

/**
 * Per request: the same host asked twice (two aliases, two codes for one domain) is one DNS
 * query. Hosts are already normalised (lower case, punycode), so the host is the key. Each
 * distinct host takes one unit of the request's MAX_UPSTREAM_CALLS, as a REST call does, so one
 * request cannot open more look-ups than that; past it the field fails and nothing is looked up.
 */
export function createTxtLoader(
  resolver: TxtResolver,
  { signal, budget }: Pick<CallContext, 'budget'> & { signal?: AbortSignal | undefined },
): TxtLoader {
  return new DataLoader<string, TxtLookupResult>((hosts) =>
    Promise.all(
      hosts.map((host) => {
        if (budget && budget.left < 1) return new UpstreamBudgetError(budget.limit);
        budget?.take();
        // One host's refusal fails its own field, not the others of the batch.
        return resolver.resolveTxt(host, signal).catch((error: Error) => error);
      }),
    ),
  );
}
