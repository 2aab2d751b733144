import { promises as dnsPromises } from 'node:dns';

const { Resolver } = dnsPromises;

export type TxtResult =
  | { kind: 'found'; values: string[] }
  | { kind: 'missing' }
  | { kind: 'invalid-name' }
  | { kind: 'failed'; reason: string };

export interface TxtLookup {
  lookup(name: string): Promise<TxtResult>;
  /** Cancels every lookup in flight, so closing the sandbox never waits for a slow resolver. */
  cancelAll(): void;
}

const MISSING_CODES = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * Throws on a malformed server list, so a bad DNS_SERVERS fails at start rather than at the first
 * verification.
 */
export function createTxtLookup(servers: string[] | undefined, timeoutMs: number): TxtLookup {
  // c-ares backs off between tries (the second waits about twice the first), so three slices of
  // the budget fit two tries; the hard deadline below covers resolvers that behave differently.
  const options = { timeout: Math.max(1, Math.floor(timeoutMs / 3)), tries: 2 };
  let configured: string[] | undefined;
  if (servers) {
    const probe = new Resolver(options);
    probe.setServers(servers);
    configured = probe.getServers();
  }
  const active = new Set<InstanceType<typeof Resolver>>();

  return {
    async lookup(name) {
      // One resolver per lookup: cancel() cancels everything on a resolver, and only this lookup
      // must be abandoned at its deadline.
      const resolver = new Resolver(options);
      if (configured) resolver.setServers(configured);
      active.add(resolver);
      const deadline = setTimeout(() => resolver.cancel(), timeoutMs);
      try {
        const records = await resolver.resolveTxt(name);
        return { kind: 'found', values: records.map((chunks) => chunks.join('')) };
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'UNKNOWN';
        if (MISSING_CODES.has(code)) return { kind: 'missing' };
        if (code === 'EBADNAME') return { kind: 'invalid-name' };
        return { kind: 'failed', reason: code === 'ECANCELLED' ? 'ETIMEOUT' : code };
      } finally {
        clearTimeout(deadline);
        active.delete(resolver);
      }
    },
    cancelAll() {
      for (const resolver of active) resolver.cancel();
    },
  };
}
