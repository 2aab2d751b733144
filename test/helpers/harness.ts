import type { Dispatcher } from 'undici';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../sandbox/server.js';
import { createApp } from '../../src/app.js';
import { type Config, defaultConfig } from '../../src/config.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { startDnsServer, type TestDnsServer } from './dns-server.js';

export interface GraphQLResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  data?: T | null;
  errors?: Array<{
    message: string;
    path?: Array<string | number>;
    extensions: Record<string, unknown> & { code?: string };
  }>;
}

export interface Harness {
  sandbox: Sandbox;
  config: Config;
  client: UpstreamClient;
  app: ReturnType<typeof createApp>;
  /** Runs one operation through Yoga's fetch (no port); headers are added as given. */
  gql<T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<GraphQLResponse<T>>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  sandbox?: SandboxOptions;
  /** Applied on top of the defaults; `upstream` is merged field by field. */
  config?: Partial<Omit<Config, 'upstream'>> & { upstream?: Partial<Config['upstream']> };
  /** Replaces the undici pool, for faults a real server cannot produce. */
  dispatcher?: Dispatcher;
  /** The upstream URL to use instead of the sandbox's (e.g. a closed port). */
  upstreamUrl?: string;
}

/** A real sandbox on a loopback port and a fresh app in front of it. */
export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const sandbox = await startSandbox({ faults: true, ...options.sandbox });
  const base = defaultConfig();
  const config: Config = {
    ...base,
    ...options.config,
    upstream: { ...base.upstream, ...options.config?.upstream },
  };
  const client = new UpstreamClient({
    baseUrl: options.upstreamUrl ?? sandbox.url,
    ...config.upstream,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
  });
  const app = createApp({ config, client, logError: () => {} });
  return {
    sandbox,
    config,
    client,
    app,
    gql: (query, variables, headers) => postGraphQL(app, query, variables, headers),
    async close() {
      await client.close();
      await sandbox.close();
    },
  };
}

export async function postGraphQL<T>(
  app: { fetch: (url: string, init: RequestInit) => Promise<Response> | Response },
  query: string,
  variables?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<GraphQLResponse<T>> {
  const response = await app.fetch('http://facade.test/graphql', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      ...headers,
    },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as Omit<GraphQLResponse<T>, 'status' | 'headers'>;
  return { status: response.status, headers: response.headers, ...body };
}

/** The upstream requests the sandbox received for one route, e.g. 'GET /git/v1/repo'. */
export function upstreamRequests(sandbox: Sandbox, route?: string) {
  return sandbox.requests().filter((r) => route === undefined || `${r.method} ${r.path}` === route);
}

/**
 * A test DNS server with a harness whose resolver and sandbox both ask it; registers the vitest
 * hooks and hands back live references (set once beforeAll has run).
 */
export function useDnsHarness(): { dns: TestDnsServer; h: Harness } {
  const live = {} as { dns: TestDnsServer; h: Harness };
  beforeAll(async () => {
    live.dns = await startDnsServer();
    const servers = [live.dns.address];
    live.h = await createHarness({
      sandbox: { dnsServers: servers, dnsTimeoutMs: 1000 },
      config: { dns: { servers, timeoutMs: 1000, tries: 2 } },
    });
  });
  afterAll(async () => {
    await live.h?.close();
    await live.dns?.close();
  });
  beforeEach(() => {
    live.dns.clearQueries();
    live.h.sandbox.clearRequests();
  });
  return live;
}
