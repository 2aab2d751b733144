import type { Dispatcher } from 'undici';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../sandbox/server.js';
import { type AppDeps, createApp } from '../../src/app.js';
import { type Config, defaultConfig } from '../../src/config/load.js';
import type { BreakerState } from '../../src/upstream/breaker.js';
import { type CompletedCall, UpstreamClient } from '../../src/upstream/client.js';
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
  extensions?: Record<string, unknown>;
}

type App = ReturnType<typeof createApp>;

/** What createApp takes besides the config and the client: logger, metrics, health, rate limiter. */
export type AppParts = Omit<AppDeps, 'config' | 'client'>;

/** Config fields to change; the sections that are objects (upstream, limits, rateLimit, dns) merge field by field. */
export type ConfigOverrides = {
  [K in keyof Config]?: Config[K] extends readonly unknown[] | undefined
    ? Config[K]
    : Config[K] extends object
      ? Partial<Config[K]>
      : Config[K];
};

export interface Harness {
  sandbox: Sandbox;
  config: Config;
  client: UpstreamClient;
  app: App;
  /** Runs one operation through Yoga's fetch (no port); headers are added as given. */
  gql<T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<GraphQLResponse<T>>;
  /**
   * Another app over the same sandbox and client, for settings the harness's app lacks: the config
   * overrides apply on top of the harness's; of the other parts it gets only what is given here.
   */
  createApp(options?: { config?: ConfigOverrides } & AppParts): App;
  close(): Promise<void>;
}

export interface HarnessOptions extends AppParts {
  sandbox?: SandboxOptions;
  /** Applied on top of the defaults. */
  config?: ConfigOverrides;
  /** Replaces the undici pool, for faults a real server cannot produce. */
  dispatcher?: Dispatcher;
  /** The upstream URL to use instead of the sandbox's (e.g. a closed port). */
  upstreamUrl?: string;
  /** Sees every completed upstream call, as main.ts's metrics do. */
  onCall?: (call: CompletedCall) => void;
  /** Sees every change of a route's circuit breaker, as main.ts's metrics do. */
  onBreakerChange?: (state: BreakerState, route: string) => void;
}

const isSection = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function withOverrides(base: Config, overrides: ConfigOverrides = {}): Config {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    const current = merged[key];
    merged[key] = isSection(current) && isSection(value) ? { ...current, ...value } : value;
  }
  return merged as unknown as Config;
}

/** A real sandbox on a loopback port and a fresh app in front of it. */
export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const {
    sandbox: sandboxOptions,
    config: overrides,
    dispatcher,
    upstreamUrl,
    onCall,
    onBreakerChange,
    ...parts
  } = options;
  const sandbox = await startSandbox({ faults: true, ...sandboxOptions });
  const config = withOverrides(defaultConfig(), overrides);
  const client = new UpstreamClient({
    baseUrl: upstreamUrl ?? sandbox.url,
    ...config.upstream,
    ...(dispatcher ? { dispatcher } : {}),
    ...(onCall ? { onCall } : {}),
    ...(onBreakerChange ? { onBreakerChange } : {}),
  });
  const appOver = ({ config: more, ...rest }: { config?: ConfigOverrides } & AppParts = {}) =>
    createApp({ logError: () => {}, ...rest, config: withOverrides(config, more), client });
  const app = appOver(parts);
  return {
    sandbox,
    config,
    client,
    app,
    gql: (query, variables, headers) => postGraphQL(app, query, variables, headers),
    createApp: appOver,
    async close() {
      await client.close();
      await sandbox.close();
    },
  };
}

/**
 * A harness for the enclosing describe (or file): started before its tests, closed after them,
 * its sandbox's requests and faults cleared before each test. The object stands for the harness
 * that beforeAll creates, so tests use it as they would the harness itself.
 */
export function useHarness(options: HarnessOptions | (() => HarnessOptions) = {}): Harness {
  let current: Harness | undefined;
  beforeAll(async () => {
    current = await createHarness(typeof options === 'function' ? options() : options);
  });
  afterAll(() => current?.close());
  beforeEach(() => {
    current?.sandbox.clearRequests();
    current?.sandbox.clearFaults();
  });
  return standIn('useHarness', () => current);
}

/** A test DNS server and a harness whose resolver and sandbox both ask it, for the enclosing tests. */
export function useDnsHarness(): { dns: TestDnsServer; h: Harness } {
  let dns: TestDnsServer | undefined;
  beforeAll(async () => {
    dns = await startDnsServer();
  });
  const h = useHarness(() => {
    const servers = [(dns as TestDnsServer).address];
    return {
      sandbox: { dnsServers: servers, dnsTimeoutMs: 1000 },
      config: { dns: { servers, timeoutMs: 1000, tries: 2 } },
    };
  });
  afterAll(() => dns?.close());
  beforeEach(() => dns?.clearQueries());
  return { dns: standIn('useDnsHarness', () => dns), h };
}

/** An object that forwards to what `get` returns once beforeAll has set it. */
function standIn<T extends object>(helper: string, get: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_, key) {
      const target = get();
      if (target === undefined) throw new Error(`${helper}(): used before its beforeAll ran`);
      return Reflect.get(target, key);
    },
  });
}

/** POSTs one operation to an app through its fetch (no port), or over HTTP to a URL. */
export async function postGraphQL<T>(
  target: string | { fetch: (url: string, init: RequestInit) => Promise<Response> | Response },
  query: string,
  variables?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<GraphQLResponse<T>> {
  const init: RequestInit = {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      ...headers,
    },
    body: JSON.stringify({ query, variables }),
  };
  const response = await (typeof target === 'string'
    ? fetch(target, init)
    : target.fetch('http://facade.test/graphql', init));
  const body = (await response.json()) as Omit<GraphQLResponse<T>, 'status' | 'headers'>;
  return { status: response.status, headers: response.headers, ...body };
}

/** The upstream requests the sandbox received for one route, e.g. 'GET /git/v1/repo'. */
export function upstreamRequests(sandbox: Sandbox, route?: string) {
  return sandbox.requests().filter((r) => route === undefined || `${r.method} ${r.path}` === route);
}
