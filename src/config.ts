import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { parse } from 'graphql';
import { z } from 'zod';

/** Thrown for a bad configuration value; main.ts prints its message as the one stderr line. */
export class ConfigError extends Error {}

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const bool = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no']))
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const list = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

// c-ares takes IP addresses only (a host name would need a resolver to resolve the resolver):
// 1.2.3.4, 1.2.3.4:5353, ::1, [::1]:5353. It silently wraps a port above 65535, so check it here.
function isDnsServer(entry: string): boolean {
  if (isIP(entry) === 6) return true;
  const match = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d{1,5}))?$/.exec(entry);
  const port = match?.[3] === undefined ? 53 : Number(match[3]);
  return match !== null && isIP(match[1] ?? match[2] ?? '') !== 0 && port >= 1 && port <= 65535;
}
const dnsServer = z
  .string()
  .refine(isDnsServer, 'must be IP[:port] entries (host names are not accepted)');

// An origin exactly as browsers send it: scheme, host and port only, no path or trailing slash;
// or `scheme://*.host[:port]` for every subdomain of a host (the star only as the first label).
const isOrigin = (value: string) => {
  try {
    const url = new URL(value);
    return /^https?:$/.test(url.protocol) && url.origin === value;
  } catch {
    return false;
  }
};
const origin = z.string().superRefine((value, ctx) => {
  const wildcard = /^https?:\/\/\*\./.test(value);
  const concrete = wildcard ? value.replace('://*.', '://x.') : value;
  if (!concrete.includes('*') && isOrigin(concrete)) {
    // A star over a top-level domain (`https://*.com`) would allow the whole web.
    const parent = new URL(concrete).hostname.split('.').slice(1);
    if (!wildcard || parent.length > 1 || parent[0] === 'localhost') return;
    ctx.addIssue({ code: 'custom', message: `must not allow a whole top-level domain (${value})` });
    return;
  }
  const message = /^https?:\/\/[^/]+\/+$/.test(value)
    ? `must be origins without a trailing slash (${value.replace(/\/+$/, '')})`
    : 'must be comma-separated origins like https://app.example.com or https://*.example.com';
  ctx.addIssue({ code: 'custom', message });
});

// Parsed by hand, not with z.url(): a value `new URL` refuses must become an issue, never a
// TypeError, and no message may repeat the value, which can hold a password or a key.
const upstreamUrl = z
  .string()
  .trim()
  .transform((value, ctx) => {
    const fail = (message: string) => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return fail(
        'must be an http(s) URL such as https://api.example.com (a port, if any, 1-65535)',
      );
    }
    if (!/^https?:$/.test(url.protocol)) return fail('must be an http(s) URL');
    if (url.hostname === '') return fail('must name a host');
    if (url.username !== '' || url.password !== '')
      return fail('must not embed credentials; use UPSTREAM_API_KEY');
    // The client joins paths to the origin and path; a query or fragment here would be dropped.
    if (url.search !== '' || url.hash !== '') return fail('must not have a query or fragment');
    return value.replace(/\/+$/, '');
  });

// An IP address or a DNS host name; whether it is an address of this machine, only listen() knows.
const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
const host = z
  .string()
  .trim()
  .refine(
    (value) => isIP(value) !== 0 || HOST_NAME.test(value),
    'must be an IP address or a host name',
  );

// RFC 6750's token68: what a caller can send after "Bearer ". Anything else could never match.
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

// RFC 9110's token: what an HTTP header name may be.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

// Headers FORWARD_HEADERS may never name, and why: the browser's credentials, hop-by-hop headers
// (RFC 9110 7.6.1), and what the facade's own HTTP client or rules decide for each call.
const NOT_FORWARDED: Record<string, string> = {
  cookie: 'a browser credential, never forwarded',
  'set-cookie': 'a browser credential, never forwarded',
  connection: 'a hop-by-hop header',
  'keep-alive': 'a hop-by-hop header',
  te: 'a hop-by-hop header',
  trailer: 'a hop-by-hop header',
  'transfer-encoding': 'a hop-by-hop header',
  upgrade: 'a hop-by-hop header',
  host: "set by the facade's HTTP client",
  'content-length': "set by the facade's HTTP client",
  'content-type': 'set by the facade for each call',
  accept: 'set by the facade for each call',
  'accept-encoding': "set by the facade's HTTP client",
  expect: "set by the facade's HTTP client",
  authorization: 'forwarded already (or replaced by UPSTREAM_API_KEY)',
  'x-request-id': 'forwarded already',
  traceparent: 'forwarded already, as the trace context',
  tracestate: 'forwarded already, as the trace context',
  baggage: 'forwarded already, as the trace context',
  'content-encoding': "describes the body the facade sends, not the caller's",
  // The caller's identity as a proxy states it: a caller could claim any address or host.
  forwarded: 'an identity a caller can spoof',
  'x-real-ip': 'an identity a caller can spoof',
  'x-client-ip': 'an identity a caller can spoof',
  'true-client-ip': 'an identity a caller can spoof',
  'cf-connecting-ip': 'an identity a caller can spoof',
  'x-graphql-csrf': "the facade's own CSRF header",
  'x-graphql-yoga-csrf': "the facade's own CSRF header",
  'apollo-require-preflight': "the facade's own CSRF header",
  'apollo-federation-include-trace': "the gateway's request to the facade",
};

/** Why FORWARD_HEADERS may not name this header, or undefined when it may. */
function notForwarded(name: string): string | undefined {
  if (name.startsWith('proxy-')) return 'a hop-by-hop header';
  if (name.startsWith('x-forwarded-')) return 'an identity a caller can spoof';
  // x-facade-debug carries DEBUG_TOKEN; every x-facade-* header is the facade's own.
  if (name.startsWith('x-facade-')) return "the facade's own header, which may carry a secret";
  return Object.hasOwn(NOT_FORWARDED, name) ? NOT_FORWARDED[name] : undefined;
}

const forwardHeaders = list
  .pipe(z.array(z.string().regex(HEADER_NAME, 'must be comma-separated header names')))
  .transform((names, ctx) => {
    const lower = [...new Set(names.map((name) => name.toLowerCase()))];
    for (const name of lower) {
      const why = notForwarded(name);
      if (why === undefined) continue;
      ctx.addIssue({ code: 'custom', message: `must not name ${name} (${why})` });
      return z.NEVER;
    }
    return lower;
  });

const otlpUrl = z
  .string()
  .trim()
  .refine((value) => {
    try {
      return /^https?:$/.test(new URL(value).protocol);
    } catch {
      return false;
    }
  }, 'must be an http(s) URL such as http://localhost:4318 (gRPC is not built in)');

const otlpProtocol = z
  .string()
  .trim()
  .pipe(
    z.enum(
      ['http/protobuf', 'http/json'],
      'must be http/protobuf or http/json (gRPC is not built in)',
    ),
  );

// OpenTelemetry's `key1=value1,key2=value2`, values percent-encoded (W3C Baggage's format).
const keyValues = z.string().transform((value, ctx) => {
  const out: Record<string, string> = {};
  for (const pair of value.split(',')) {
    if (pair.trim() === '') continue;
    const mark = pair.indexOf('=');
    const key = mark > 0 ? pair.slice(0, mark).trim() : '';
    let decoded: string | undefined;
    try {
      decoded = mark > 0 ? decodeURIComponent(pair.slice(mark + 1).trim()) : undefined;
    } catch {
      decoded = undefined;
    }
    if (key === '' || decoded === undefined) {
      ctx.addIssue({ code: 'custom', message: 'must be key=value pairs separated by commas' });
      return z.NEVER;
    }
    out[key] = decoded;
  }
  return out;
});

// A document id: what @graphql-codegen/client-preset writes (`sha256:<hex>`, the GraphQL over
// HTTP draft's form, or SHA-1 hex) or a custom hash function's output; bounded, since it travels
// in URLs.
const DOCUMENT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * The trusted-documents manifest `@graphql-codegen/client-preset` writes with
 * `persistedDocuments: true`: a JSON object of id -> document text. Each document must parse, and
 * an id of 64 hex digits (after `sha256:` or bare) must be the SHA-256 of its document (the
 * preset's default hash), so a manifest edited by hand or out of date fails here, not on a
 * client's request.
 */
const manifestFile = z.string().transform((path, ctx) => {
  const fail = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return fail(`cannot read the manifest (${typeof code === 'string' ? code : 'unreadable'})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return fail('the manifest is not JSON');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return fail('the manifest must be a JSON object of document id -> document');
  const documents = new Map<string, string>();
  for (const [id, document] of Object.entries(json)) {
    const shown = JSON.stringify(id.slice(0, 80));
    if (!DOCUMENT_ID.test(id))
      return fail(`the manifest's id ${shown} is not a hash (1-128 letters, digits, _.:-)`);
    if (typeof document !== 'string') return fail(`the manifest's entry ${shown} is not a string`);
    try {
      parse(document, { noLocation: true });
    } catch {
      return fail(`the manifest's entry ${shown} is not a GraphQL document`);
    }
    const sha256 = /^(?:sha256:)?([0-9a-f]{64})$/i.exec(id)?.[1];
    if (sha256 && createHash('sha256').update(document).digest('hex') !== sha256.toLowerCase())
      return fail(`the manifest's id ${shown} is not the SHA-256 of its document`);
    documents.set(id, document);
  }
  if (documents.size === 0) return fail('the manifest holds no documents');
  return documents;
});

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

const schema = z.object({
  PORT: int(0, 65535).default(4000),
  HOST: host.optional(),
  // Time to receive one whole request, headers and body; the headers alone get at most 10 s.
  REQUEST_TIMEOUT_MS: int(1_000, 600_000).default(30_000),
  // Per process (each worker its own): past it a new connection is closed at once.
  MAX_CONNECTIONS: int(1, 1_000_000).default(1_000),
  // Unset: /metrics on the GraphQL port.
  METRICS_PORT: int(0, 65535).optional(),
  UPSTREAM_URL: upstreamUrl.optional(),
  UPSTREAM_API_KEY: z.string().trim().min(1).optional(),
  UPSTREAM_TIMEOUT_MS: int(1, 600_000).default(10_000),
  DEV_SERVER_TIMEOUT_MS: int(1, 600_000).default(60_000),
  UPSTREAM_CONNECTIONS: int(1, 1024).default(32),
  UPSTREAM_MAX_RESPONSE_BYTES: int(1024).default(8 * 1024 * 1024),
  UPSTREAM_RETRIES: int(0, 10).default(2),
  BREAKER_THRESHOLD: int(0, 1000).default(5),
  BREAKER_COOLDOWN_MS: int(1, 600_000).default(5_000),
  DNS_SERVERS: list
    .pipe(
      z
        .array(dnsServer, 'must be host[:port] entries')
        .min(1, 'must name at least one server (unset it for the system resolvers)'),
    )
    .optional(),
  DNS_TIMEOUT_MS: int(1, 60_000).default(3_000),
  DNS_TRIES: int(1, 10).default(2),
  // Each look-up in flight holds a resolver channel and a socket; past it a look-up is refused.
  DNS_MAX_CONCURRENT: int(1, 10_000).default(64),
  MAX_PAGE_SIZE: int(1, 10_000).default(100),
  MAX_COALESCED_RANGE: int(0, 100_000).default(200),
  CLIENT_TOKENS: list
    .pipe(
      z
        .array(
          z
            .string()
            .regex(
              BEARER_TOKEN,
              'must be comma-separated bearer tokens (letters, digits, -._~+/ and trailing =)',
            ),
        )
        .min(1, 'must name at least one token'),
    )
    .optional(),
  ALLOW_ANONYMOUS_SERVICE_KEY: bool.default(false),
  SANDBOX_REPOSITORIES: int(0, 1_000_000).default(50),
  SANDBOX_PORT: int(0, 65535).default(0),
  SANDBOX_FAULTS: bool.default(false),
  NODE_ENV: z.string().trim().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  MAX_DEPTH: int(1, 1000).default(10),
  MAX_TOKENS: int(1, 1_000_000).default(2000),
  MAX_ALIASES: int(0, 10_000).default(15),
  MAX_DIRECTIVES: int(0, 10_000).default(50),
  MAX_COST: int(1, 100_000_000).default(25_000),
  MAX_BODY_BYTES: int(1, 100 * 1024 * 1024).default(1024 * 1024),
  BATCHING_LIMIT: int(0, 100).default(0),
  INTROSPECTION: bool.default(true),
  // Unset: on, except with NODE_ENV=production.
  GRAPHIQL: bool.optional(),
  // Unset: `_service { sdl }` follows INTROSPECTION (it discloses the same schema).
  SUBGRAPH_SDL: bool.optional(),
  // A flood backstop by default (1,000 requests a second per client over a minute): a busy
  // frontend or a load test from one address stays under it; public deployments set their own.
  RATE_LIMIT_POINTS: int(0, 1_000_000_000).default(60_000),
  RATE_LIMIT_WINDOW_S: int(1, 86_400).default(60),
  // Unset: RATE_LIMIT_POINTS. Unverified tokens are free to invent, so they cannot be the only key.
  RATE_LIMIT_ADDRESS_POINTS: int(0, 1_000_000_000).optional(),
  REDIS_URL: z
    .string()
    .trim()
    .pipe(z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' }))
    .optional(),
  TRUST_PROXY: bool.default(false),
  CORS_ORIGINS: list.pipe(z.array(origin)).optional(),
  SHUTDOWN_GRACE_MS: int(0, 600_000).default(25_000),
  // Unset: 10 s with NODE_ENV=production, 0 (start at once) in development.
  WARM_UP_MS: int(0, 120_000).optional(),
  READINESS_CHECK_UPSTREAM: bool.default(false),
  MAX_UPSTREAM_CALLS: int(1, 10_000).default(20),
  // Explicit choice of the built-in sandbox as the upstream; required for it in production.
  SANDBOX: bool.optional(),
  // Unset: 1 in development, every available core (`auto`) with NODE_ENV=production.
  WORKERS: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^(auto|\d{1,3})$/, 'must be a whole number from 1 to 256, or auto')
    .transform((value) => (value === 'auto' ? 'auto' : Number(value)))
    .pipe(z.union([z.literal('auto'), z.number().int().min(1).max(256)]))
    .optional(),
  // OpenTelemetry's own variables, as its specification defines them (only the trace exporter's).
  OTEL_SDK_DISABLED: bool.default(false),
  OTEL_TRACES_EXPORTER: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['otlp', 'none'], 'must be otlp or none (the only exporters built in)'))
    .default('otlp'),
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl.optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
  OTEL_EXPORTER_OTLP_HEADERS: keyValues.optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: keyValues.optional(),
  OTEL_SERVICE_NAME: z.string().trim().min(1).max(255).optional(),
  OTEL_RESOURCE_ATTRIBUTES: keyValues.optional(),
  OTEL_TRACES_SAMPLER: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(SAMPLERS, `must be one of ${SAMPLERS.join(', ')}`))
    .default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .trim()
    .regex(/^(?:0|1|0?\.\d+|1\.0*)$/, 'must be a ratio between 0 and 1')
    .transform(Number)
    .optional(),
  // Request headers allowed from browsers beyond the built-in set.
  CORS_ALLOWED_HEADERS: list
    .pipe(z.array(z.string().regex(HEADER_NAME, 'must be comma-separated header names')))
    .transform((names) => names.map((name) => name.toLowerCase()))
    .optional(),
  // Request headers passed on to the upstream besides Authorization and the request id.
  FORWARD_HEADERS: forwardHeaders.optional(),
  // A caller presenting it in x-facade-debug sees the REST calls behind its answer in production.
  DEBUG_TOKEN: z.string().trim().min(16, 'must be at least 16 characters').optional(),
  FEDERATED_TRACING: bool.default(false),
  // Trusted documents: the manifest's path, and whether only its documents run.
  PERSISTED_DOCUMENTS: manifestFile.optional(),
  PERSISTED_DOCUMENTS_ONLY: bool.default(false),
  // Automatic persisted queries: the memory store's bound, how long Redis keeps a document, and
  // the bound of APQ's own key space in Redis.
  APQ_CACHE_BYTES: int(0, 1024 * 1024 * 1024).default(8 * 1024 * 1024),
  APQ_TTL_S: int(1, 30 * 86_400).default(86_400),
  APQ_REDIS_BYTES: int(0, 1024 * 1024 * 1024).default(64 * 1024 * 1024),
});

type Env = z.output<typeof schema>;

/** Every variable the facade reads (the deploy manifests are checked against it). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

// Never echoed back, not even in a start-up error: keys, tokens, and URLs that can carry a password.
const SECRETS = new Set([
  'UPSTREAM_API_KEY',
  'CLIENT_TOKENS',
  'REDIS_URL',
  'UPSTREAM_URL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'DEBUG_TOKEN',
]);

export interface Config {
  port: number;
  host: string | undefined;
  /** What one client may take of the HTTP server, in each process. */
  server: { requestTimeoutMs: number; maxConnections: number };
  /** Serve /metrics on this port (same host) instead of the GraphQL port. */
  metricsPort: number | undefined;
  /** Unset: the embedded sandbox is started and used. */
  upstreamUrl: string | undefined;
  upstream: {
    apiKey: string | undefined;
    timeoutMs: number;
    devServerTimeoutMs: number;
    connections: number;
    maxResponseBytes: number;
    retries: number;
    breakerThreshold: number;
    breakerCooldownMs: number;
  };
  dns: {
    servers: string[] | undefined;
    timeoutMs: number;
    tries: number;
    /** TXT look-ups in flight in the process; one more is refused with RATE_LIMITED. */
    maxConcurrent: number;
  };
  maxPageSize: number;
  /** Pages of one request are merged into one upstream call when the covering range is this small. */
  maxCoalescedRange: number;
  clientTokens: string[] | undefined;
  allowAnonymousServiceKey: boolean;
  sandbox: { repositories: number; port: number; faults: boolean };
  /** NODE_ENV=production: field suggestions are hidden. */
  production: boolean;
  /** Serve GraphiQL to browsers at the GraphQL endpoint. */
  graphiql: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** What one GraphQL request may ask for; all checked before any execution. */
  limits: {
    maxDepth: number;
    maxTokens: number;
    maxAliases: number;
    maxDirectives: number;
    maxCost: number;
    maxBodyBytes: number;
    /** Operations per batched HTTP request; 0 refuses batches. */
    batchingLimit: number;
    introspection: boolean;
    /** `_service { sdl }`, which a federation gateway composing at run time asks for. */
    subgraphSdl: boolean;
  };
  /** Requests per client per window; points 0 disables. Counters in Redis when redisUrl is set. */
  rateLimit: {
    points: number;
    /** Requests per address per window, whatever tokens they carry; 0: no ceiling. */
    addressPoints: number;
    windowS: number;
    redisUrl: string | undefined;
    trustProxy: boolean;
  };
  /** Origins allowed to call from a browser; unset: same origin only. */
  corsOrigins: string[] | undefined;
  shutdownGraceMs: number;
  /** How long the process may warm its request path before it listens; 0: not at all. */
  warmUpMs: number;
  readinessCheckUpstream: boolean;
  /** Upstream calls one GraphQL request may cause; a logical call counts once, retries included. */
  maxUpstreamCalls: number;
  /** Worker processes (node:cluster); 1 runs the facade in this process alone. */
  workers: number;
  /** Span export (OTEL_*); undefined: no SDK is loaded and nothing is exported. */
  tracing: TracingConfig | undefined;
  /** Request headers browsers may send beyond the built-in set. */
  corsAllowedHeaders: string[];
  /** Request headers (lower-cased) passed on to every upstream call, as the caller sent them. */
  forwardHeaders: string[];
  /** Unlocks `extensions.upstreamCalls` in production for a caller that presents it. */
  debugToken: string | undefined;
  /** Answer `apollo-federation-include-trace: ftv1` with `extensions.ftv1`. */
  federatedTracing: boolean;
  /** Trusted documents (PERSISTED_DOCUMENTS): id -> document text; `only` refuses all others. */
  persistedDocuments: { documents: ReadonlyMap<string, string> | undefined; only: boolean };
  /**
   * Automatic persisted queries, on unless only trusted documents run. Documents are kept in
   * memory up to `cacheBytes` (0: none), and with REDIS_URL in Redis for `ttlS` after their last
   * use, up to `redisBytes` (0: none).
   */
  apq: {
    enabled: boolean;
    cacheBytes: number;
    ttlS: number;
    redisBytes: number;
    redisUrl: string | undefined;
  };
}

export type TraceSampler = (typeof SAMPLERS)[number];

export interface TracingConfig {
  /** The full URL spans are POSTed to (`.../v1/traces`). */
  endpoint: string;
  protocol: 'http/protobuf' | 'http/json';
  headers: Record<string, string>;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: TraceSampler;
  /** The ratio of the traceidratio samplers. */
  samplerRatio: number;
}

function toConfig(env: Env): Config {
  return {
    port: env.PORT,
    host: env.HOST,
    server: { requestTimeoutMs: env.REQUEST_TIMEOUT_MS, maxConnections: env.MAX_CONNECTIONS },
    metricsPort: env.METRICS_PORT,
    upstreamUrl: env.UPSTREAM_URL,
    upstream: {
      apiKey: env.UPSTREAM_API_KEY,
      timeoutMs: env.UPSTREAM_TIMEOUT_MS,
      devServerTimeoutMs: env.DEV_SERVER_TIMEOUT_MS,
      connections: env.UPSTREAM_CONNECTIONS,
      maxResponseBytes: env.UPSTREAM_MAX_RESPONSE_BYTES,
      retries: env.UPSTREAM_RETRIES,
      breakerThreshold: env.BREAKER_THRESHOLD,
      breakerCooldownMs: env.BREAKER_COOLDOWN_MS,
    },
    dns: {
      servers: env.DNS_SERVERS,
      timeoutMs: env.DNS_TIMEOUT_MS,
      tries: env.DNS_TRIES,
      maxConcurrent: env.DNS_MAX_CONCURRENT,
    },
    maxPageSize: env.MAX_PAGE_SIZE,
    maxCoalescedRange: env.MAX_COALESCED_RANGE,
    clientTokens: env.CLIENT_TOKENS,
    allowAnonymousServiceKey: env.ALLOW_ANONYMOUS_SERVICE_KEY,
    sandbox: {
      repositories: env.SANDBOX_REPOSITORIES,
      port: env.SANDBOX_PORT,
      faults: env.SANDBOX_FAULTS,
    },
    production: env.NODE_ENV === 'production',
    graphiql: env.GRAPHIQL ?? env.NODE_ENV !== 'production',
    logLevel: env.LOG_LEVEL,
    limits: {
      maxDepth: env.MAX_DEPTH,
      maxTokens: env.MAX_TOKENS,
      maxAliases: env.MAX_ALIASES,
      maxDirectives: env.MAX_DIRECTIVES,
      maxCost: env.MAX_COST,
      maxBodyBytes: env.MAX_BODY_BYTES,
      batchingLimit: env.BATCHING_LIMIT,
      introspection: env.INTROSPECTION,
      subgraphSdl: env.SUBGRAPH_SDL ?? env.INTROSPECTION,
    },
    rateLimit: {
      points: env.RATE_LIMIT_POINTS,
      addressPoints: env.RATE_LIMIT_ADDRESS_POINTS ?? env.RATE_LIMIT_POINTS,
      windowS: env.RATE_LIMIT_WINDOW_S,
      redisUrl: env.REDIS_URL,
      trustProxy: env.TRUST_PROXY,
    },
    corsOrigins: env.CORS_ORIGINS,
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
    warmUpMs: env.WARM_UP_MS ?? (env.NODE_ENV === 'production' ? 10_000 : 0),
    readinessCheckUpstream: env.READINESS_CHECK_UPSTREAM,
    maxUpstreamCalls: env.MAX_UPSTREAM_CALLS,
    workers:
      env.WORKERS === 'auto' || (env.WORKERS === undefined && env.NODE_ENV === 'production')
        ? availableParallelism()
        : (env.WORKERS ?? 1),
    tracing: tracingConfig(env),
    corsAllowedHeaders: env.CORS_ALLOWED_HEADERS ?? [],
    forwardHeaders: env.FORWARD_HEADERS ?? [],
    debugToken: env.DEBUG_TOKEN,
    federatedTracing: env.FEDERATED_TRACING,
    persistedDocuments: { documents: env.PERSISTED_DOCUMENTS, only: env.PERSISTED_DOCUMENTS_ONLY },
    apq: {
      enabled: !env.PERSISTED_DOCUMENTS_ONLY,
      cacheBytes: env.APQ_CACHE_BYTES,
      ttlS: env.APQ_TTL_S,
      redisBytes: env.APQ_REDIS_BYTES,
      redisUrl: env.REDIS_URL,
    },
  };
}

/**
 * The OpenTelemetry specification's rules: the signal's own variable wins over the general one,
 * and the general endpoint is a base to which `/v1/traces` is appended. No endpoint, no export.
 */
function tracingConfig(env: Env): TracingConfig | undefined {
  if (env.OTEL_SDK_DISABLED || env.OTEL_TRACES_EXPORTER === 'none') return undefined;
  const endpoint =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (env.OTEL_EXPORTER_OTLP_ENDPOINT &&
      `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`);
  if (!endpoint) return undefined;
  return {
    endpoint,
    protocol:
      env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    headers: { ...env.OTEL_EXPORTER_OTLP_HEADERS, ...env.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
    // The specification's order: OTEL_SERVICE_NAME, then service.name in the resource attributes.
    serviceName:
      env.OTEL_SERVICE_NAME ??
      env.OTEL_RESOURCE_ATTRIBUTES?.['service.name'] ??
      'graphql-rest-facade',
    resourceAttributes: env.OTEL_RESOURCE_ATTRIBUTES ?? {},
    sampler: env.OTEL_TRACES_SAMPLER,
    samplerRatio: env.OTEL_TRACES_SAMPLER_ARG ?? 1,
  };
}

/** The only reader of the environment. Empty strings count as unset. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const env: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = source[key];
    if (value !== undefined && value !== '') env[key] = value;
  }
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? 'configuration');
    const shown = SECRETS.has(name) ? '' : ` (got ${JSON.stringify(env[name])})`;
    throw new ConfigError(`${name}: ${issue?.message ?? 'invalid'}${shown}`);
  }
  const config = toConfig(parsed.data);
  checkUpstreamChoice(parsed.data);
  if (config.metricsPort && config.metricsPort === config.port) {
    throw new ConfigError(`METRICS_PORT: must differ from PORT (both ${config.port})`);
  }
  if (config.persistedDocuments.only && !config.persistedDocuments.documents) {
    throw new ConfigError(
      'PERSISTED_DOCUMENTS_ONLY: true needs a manifest of trusted documents; set PERSISTED_DOCUMENTS to its path',
    );
  }
  // Without a service key the caller's Authorization goes upstream as it came: it cannot also be
  // one of the facade's client tokens, so the tokens would silently check nothing.
  if (config.clientTokens?.length && !config.upstream.apiKey) {
    throw new ConfigError(
      "CLIENT_TOKENS: checked only in service-key mode; set UPSTREAM_API_KEY, or unset CLIENT_TOKENS to forward callers' own credentials",
    );
  }
  if (config.upstream.apiKey && !config.clientTokens?.length && !config.allowAnonymousServiceKey) {
    throw new ConfigError(
      'UPSTREAM_API_KEY: service-key mode acts for every caller; set CLIENT_TOKENS, or ALLOW_ANONYMOUS_SERVICE_KEY=true to run without a client check',
    );
  }
  return config;
}

/**
 * The sandbox answers with invented data: a production deploy that forgot UPSTREAM_URL must not
 * start and look healthy.
 */
function checkUpstreamChoice(env: Env): void {
  if (env.SANDBOX === true && env.UPSTREAM_URL !== undefined) {
    throw new ConfigError(
      'SANDBOX: true serves the built-in sandbox; unset UPSTREAM_URL, or SANDBOX',
    );
  }
  if (env.UPSTREAM_URL !== undefined || env.SANDBOX === true) return;
  if (env.SANDBOX === false) {
    throw new ConfigError('UPSTREAM_URL: not set, and SANDBOX=false refuses the built-in sandbox');
  }
  if (env.NODE_ENV === 'production') {
    throw new ConfigError(
      'UPSTREAM_URL: not set; in production the built-in sandbox runs only with SANDBOX=true',
    );
  }
}

/** Defaults for tests and tools: the same schema, no environment. */
export function defaultConfig(): Config {
  return loadConfig({});
}
