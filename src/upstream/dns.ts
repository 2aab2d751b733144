import { promises as dnsPromises } from 'node:dns';
import { context, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import DataLoader from 'dataloader';
import { LRUCache } from 'lru-cache';
import { type Config, ConfigError } from '../config/load.js';
import { FacadeError, UpstreamBudgetError } from '../errors.js';
import type { CallContext } from './client.js';
import { type DnsServer, parseServer, queryTxt } from './txt-query.js';

// c-ares's Resolver, not dns.lookup(): a look-up takes no libuv thread-pool slot.
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
   * Rejects only with RATE_LIMITED, when DNS_MAX_CONCURRENT look-ups are in flight; every DNS
   * outcome is a result. The signal abandons the look-up (the request went away).
   */
  resolveTxt(host: string, signal?: AbortSignal): Promise<TxtLookupResult>;
  /** DNS_TIMEOUT_MS: one look-up, all tries together. */
  readonly timeoutMs: number;
}

/** How one look-up asks: c-ares's options and servers, and the servers asked on the wire. */
interface LookUpOptions {
  cares: { timeout: number; tries: number };
  servers: string[] | undefined;
  /** Empty when no answer is kept: then c-ares alone asks. */
  wireServers: DnsServer[];
  timeoutMs: number;
}

const BY_CODE: Record<string, TxtLookupResult> = {
  ENOTFOUND: { outcome: 'no-such-name' },
  ENODATA: { outcome: 'no-record' },
  ETIMEOUT: { outcome: 'timeout' },
  EREFUSED: { outcome: 'refused' },
};

/** c-ares's codes for the response codes that have no outcome of their own. */
const BY_RCODE: Record<number, string> = { 1: 'EFORMERR', 2: 'ESERVFAIL', 4: 'ENOTIMP' };

/**
 * Once per app, so DNS_MAX_CONCURRENT holds for the process. A bad DNS_SERVERS throws a
 * ConfigError here, at start: the config admits host names, which c-ares refuses.
 */
export function createTxtResolver(
  { servers, timeoutMs, tries, maxConcurrent, cacheMaxTtlS, cacheEntries }: Config['dns'],
  tracer?: Tracer,
): TxtResolver {
  // c-ares stretches later tries, so the deadline in lookUp() is what bounds a look-up.
  const cares = { timeout: Math.max(1, Math.floor(timeoutMs / tries)), tries };
  const configured = servers && caresServers(servers, cares);
  // Only found answers are kept, for their TTL (docs/domains.md).
  const answers =
    cacheMaxTtlS > 0 && cacheEntries > 0
      ? new LRUCache<string, string[]>({ max: cacheEntries, ttl: cacheMaxTtlS * 1000 })
      : undefined;
  // c-ares gives no TTL for TXT: a look-up whose answer may be kept is asked on the wire.
  const wireServers = answers ? (configured ?? new Resolver().getServers()).map(parseServer) : [];
  const options: LookUpOptions = { cares, servers: configured, wireServers, timeoutMs };
  let inFlight = 0;
  return {
    timeoutMs,
    async resolveTxt(host, signal) {
      const kept = answers?.get(host);
      if (kept) return { outcome: 'found', values: kept };
      // Refused, not queued: a queue would hold the requests while a resolver never answers.
      if (inFlight >= maxConcurrent) {
        throw new FacadeError(
          'RATE_LIMITED',
          'Too many DNS look-ups in progress (DNS_MAX_CONCURRENT); try again in a moment',
          { retryAfter: 1 },
        );
      }
      inFlight += 1;
      let result: TxtLookupResult;
      try {
        result = tracer
          ? await traced(tracer, host, () => lookUp(host, options, signal))
          : await lookUp(host, options, signal);
      } finally {
        inFlight -= 1;
      }
      if (answers && result.outcome === 'found' && result.ttlS) {
        answers.set(host, result.values, { ttl: Math.min(result.ttlS, cacheMaxTtlS) * 1000 });
      }
      return result;
    },
  };
}

function caresServers(servers: string[], cares: LookUpOptions['cares']): string[] {
  try {
    const probe = new Resolver(cares);
    probe.setServers(servers);
    return probe.getServers();
  } catch (error) {
    throw new ConfigError(
      `DNS_SERVERS: ${(error as Error).message} (resolvers must be IP addresses, host[:port])`,
    );
  }
}

/** One look-up, settled once: on an answer, at its deadline or when `signal` aborts. */
async function lookUp(
  host: string,
  options: LookUpOptions,
  signal: AbortSignal | undefined,
): Promise<TxtLookupResult> {
  if (signal?.aborted) return { outcome: 'failed', code: 'ECANCELLED' };
  const cancelled = new AbortController();
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    cancelled.abort();
  }, options.timeoutMs);
  const abort = () => cancelled.abort();
  signal?.addEventListener('abort', abort, { once: true });
  try {
    const onWire =
      options.wireServers.length > 0
        ? await askOnWire(host, options, cancelled.signal)
        : 'truncated';
    const result =
      onWire === 'truncated' ? await askCares(host, options, cancelled.signal) : onWire;
    return timedOut ? { outcome: 'timeout' } : result;
  } finally {
    clearTimeout(deadline);
    signal?.removeEventListener('abort', abort);
  }
}

/**
 * One channel per look-up: cancel() ends everything on a channel, and a fresh channel has an
 * empty cache, so the answer is what is published now.
 */
async function askCares(
  host: string,
  { cares, servers }: LookUpOptions,
  cancelled: AbortSignal,
): Promise<TxtLookupResult> {
  const resolver = new Resolver(cares);
  if (servers) resolver.setServers(servers);
  const cancel = () => resolver.cancel();
  cancelled.addEventListener('abort', cancel, { once: true });
  try {
    const records = await resolver.resolveTxt(host);
    // The character-strings of one record make one value.
    return { outcome: 'found', values: records.map((chunks) => chunks.join('')) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'UNKNOWN';
    return BY_CODE[code] ?? { outcome: 'failed', code };
  } finally {
    cancelled.removeEventListener('abort', cancel);
  }
}

/**
 * Asks as c-ares does: each try asks each server in turn, a REFUSED or SERVFAIL moves on to the
 * next; an answer too large for UDP is `truncated`, for c-ares to ask over TCP.
 */
async function askOnWire(
  host: string,
  { wireServers: servers, cares }: LookUpOptions,
  cancelled: AbortSignal,
): Promise<TxtLookupResult | 'truncated'> {
  let last: TxtLookupResult = { outcome: 'timeout' };
  for (let attempt = 0; attempt < cares.tries * servers.length; attempt++) {
    const server = servers[attempt % servers.length] as DnsServer;
    try {
      const answer = await queryTxt(server, host, cares.timeout, cancelled);
      if (answer.truncated) return 'truncated';
      if (answer.rcode === 0) {
        return answer.values.length > 0
          ? { outcome: 'found', values: answer.values, ttlS: answer.ttlS }
          : { outcome: 'no-record' };
      }
      if (answer.rcode === 3) return { outcome: 'no-such-name' };
      last =
        answer.rcode === 5
          ? { outcome: 'refused' }
          : { outcome: 'failed', code: BY_RCODE[answer.rcode] ?? 'EBADRESP' };
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

/** One client span per look-up; only a timeout, refusal or failure is an error status. */
async function traced(
  tracer: Tracer,
  host: string,
  lookUpHost: () => Promise<TxtLookupResult>,
): Promise<TxtLookupResult> {
  const span = tracer.startSpan(
    'dns TXT',
    {
      kind: SpanKind.CLIENT,
      attributes: { 'dns.question.name': host, 'dns.question.type': 'TXT' },
    },
    context.active(),
  );
  const result = await lookUpHost();
  span.setAttribute('facade.dns.outcome', result.outcome);
  if (result.outcome === 'found') span.setAttribute('facade.dns.values', result.values.length);
  if (result.outcome === 'timeout' || result.outcome === 'refused' || result.outcome === 'failed')
    span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
  return result;
}

export type TxtLoader = DataLoader<string, TxtLookupResult>;

/**
 * Per request: one DNS query per host (hosts are already normalised), each taking one unit of
 * MAX_UPSTREAM_CALLS; past it the field fails and nothing is looked up.
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
