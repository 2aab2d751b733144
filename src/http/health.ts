import { connect } from 'node:net';

export interface Health {
  /** On SIGTERM: /readiness answers 503 so load balancers stop sending new requests. */
  startDraining(): void;
  readonly draining: boolean;
  /** Ready to serve: not draining and, when configured, the upstream accepts connections. */
  ready(): Promise<boolean>;
  /** Redis's state, when configured: it never makes the process unready. */
  report(): { redis?: 'available' | 'unavailable' };
}

export interface HealthOptions {
  /** When set, readiness also needs a TCP connection to this URL's host and port. */
  probeUrl?: string | undefined;
  probeTimeoutMs?: number;
  /** One more condition, e.g. that every worker of the cluster is ready. */
  gate?: (() => boolean) | undefined;
  redis?: { readonly available: boolean } | undefined;
}

// A probe per readiness request would let anyone who can reach /readiness hammer the upstream.
const PROBE_CACHE_MS = 2_000;

export function createHealth(options: HealthOptions = {}): Health {
  let draining = false;
  let probed: { at: number; result: Promise<boolean> } | undefined;
  const probe = (url: string): Promise<boolean> => {
    const now = Date.now();
    if (!probed || now - probed.at > PROBE_CACHE_MS) {
      probed = { at: now, result: canConnect(new URL(url), options.probeTimeoutMs ?? 1_000) };
    }
    return probed.result;
  };
  return {
    startDraining() {
      draining = true;
    },
    get draining() {
      return draining;
    },
    async ready() {
      if (draining || (options.gate && !options.gate())) return false;
      return options.probeUrl ? probe(options.probeUrl) : true;
    },
    report() {
      const { redis } = options;
      if (!redis) return {};
      return { redis: redis.available ? 'available' : 'unavailable' };
    },
  };
}

function canConnect(url: URL, timeoutMs: number): Promise<boolean> {
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}
