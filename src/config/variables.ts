// Every environment variable the facade reads, each declared once in the section of
// docs/configuration.md it belongs to, nested as Config is; src/config/load.ts derives the rest.
import { z } from 'zod';
import { CACHEABLE_PATHS } from '../upstream/endpoints.js';
import { UPSTREAM_LIMIT_HEADERS } from '../upstream/response-headers.js';
import {
  bearerTokens,
  bool,
  corsHeaders,
  dnsServers,
  forwardHeaders,
  host,
  int,
  LOG_LEVELS,
  manifestFile,
  origins,
  otlpProtocol,
  otlpUrl,
  passedBackHeaders,
  propagators,
  redisKeyPrefix,
  redisUrl,
  routeMaxAges,
  sdkReads,
  tracesExporter,
  upstreamUrl,
  workers,
} from './values.js';
import { section } from './variable.js';

const MiB = 1024 * 1024;
const DAY_S = 86_400;

/** REDIS_TIMEOUT_MS's default: far longer than a healthy Redis takes, too short for a request. */
export const REDIS_TIMEOUT_MS = 50;

const server = section('server');
const upstream = section('upstream');
const dns = section('dns');
const limits = section('limits');
const rateLimits = section('rate-limits');
const browsers = section('browsers');
const persistedDocuments = section('persisted-documents');
const caching = section('caching');
const operations = section('operations');
const tracing = section('tracing');

export const settingsSchema = z.object({
  port: server('PORT', int(0, 65535).default(4000), { doc: 'port the facade listens on' }),
  host: server('HOST', host.optional(), {
    doc: 'address it binds',
    default: "unset: all interfaces (Node's default, `::` or `0.0.0.0`)",
    accepted: 'an IP address or a host name',
  }),
  server: z.object({
    requestTimeoutMs: server('REQUEST_TIMEOUT_MS', int(1_000, 600_000).default(30_000), {
      doc: 'time a client has to send one whole request, headers and body; the headers alone get at most 10 s (or this, if less). Past it the answer is HTTP 408 and the connection is closed. Checked every second ([operations](operations.md#connections))',
    }),
    maxConnections: server('MAX_CONNECTIONS', int(1, 1_000_000).default(1_000), {
      doc: 'open connections per process (each worker has its own); a new one past it is closed at once, unanswered ([operations](operations.md#connections))',
    }),
  }),
  metricsPort: server('METRICS_PORT', int(0, 65535).optional(), {
    doc: 'serve `/metrics` on this port (on `HOST` too) instead of the GraphQL port, which then answers 404 there; with `WORKERS` above 1 the primary serves it, for every worker ([operations](operations.md#metrics))',
    default: 'unset: the GraphQL port',
    accepted: '0–65535, not `PORT`',
  }),
  workers: server('WORKERS', workers.optional(), {
    doc: 'worker processes sharing the port (`node:cluster`); `1` runs one process, no cluster ([operations](operations.md#workers))',
    default: 'unset: `1`; every available core (`auto`) with `NODE_ENV=production`',
    accepted:
      "a whole number 1–256, or `auto` (`os.availableParallelism()`: the machine's cores, not a container's CPU limit)",
  }),
  nodeEnv: server('NODE_ENV', z.string().trim().optional(), {
    doc: '`production` hides field suggestions ("Did you mean …?") in validation messages',
    accepted: 'any string; only `production` changes anything',
  }),

  upstreamUrl: upstream('UPSTREAM_URL', upstreamUrl.optional(), {
    doc: 'base URL of the REST API; a path prefix is kept, trailing slashes are dropped',
    default: 'unset: the facade refuses to start (`npm start` sets it to the built-in sandbox)',
    accepted:
      'an `http` or `https` URL with a host, a port (if any) of 1–65535, and no user name, password, query or fragment',
    secret: true,
  }),
  upstream: z.object({
    apiKey: upstream('UPSTREAM_API_KEY', z.string().trim().min(1).optional(), {
      doc: "the facade's own upstream credential (service-key mode): sent as `Authorization: Bearer <key>` instead of the caller's header",
      default: "unset: forward the caller's `Authorization`",
      accepted: 'any non-empty string',
      secret: true,
    }),
    timeoutMs: upstream('UPSTREAM_TIMEOUT_MS', int(1, 600_000).default(10_000), {
      doc: 'time allowed for one upstream call, retries included',
    }),
    devServerTimeoutMs: upstream('DEV_SERVER_TIMEOUT_MS', int(1, 600_000).default(60_000), {
      doc: 'the same for `requestDevServer`, which starts machines',
    }),
    connections: upstream('UPSTREAM_CONNECTIONS', int(1, 1024).default(32), {
      doc: 'keep-alive connections in the upstream pool',
    }),
    maxResponseBytes: upstream('UPSTREAM_MAX_RESPONSE_BYTES', int(1024).default(8 * MiB), {
      doc: 'the largest upstream answer accepted; a larger one is `UPSTREAM_BAD_RESPONSE`',
      default: '`8388608` (8 MiB)',
    }),
    retries: upstream('UPSTREAM_RETRIES', int(0, 10).default(2), {
      doc: 'retries of a failed read (GET only)',
    }),
    breakerThreshold: upstream('BREAKER_THRESHOLD', int(0, 1000).default(5), {
      doc: "consecutive upstream faults on one route that open that route's circuit; `0` turns the breaker off",
    }),
    breakerCooldownMs: upstream('BREAKER_COOLDOWN_MS', int(1, 600_000).default(5_000), {
      doc: 'how long an open circuit fails fast before one trial call',
    }),
    cacheMaxAge: caching(
      'UPSTREAM_CACHE_MAX_AGE',
      routeMaxAges(CACHEABLE_PATHS).default(() => ({})),
      {
        doc: "how long each upstream read's answers may be kept when the upstream sends no `Cache-Control` or `Expires` of its own (which always win); `0` keeps nothing ([caching](caching.md))",
        default: 'unset: a read without its own headers has no policy, and is never kept',
        accepted: `\`path=seconds\` pairs separated by commas, each path an upstream read: ${CACHEABLE_PATHS.map((path) => `\`${path}\``).join(', ')} (e.g. \`/git/v1/repo=30\`)`,
      },
    ),
    responseHeaders: upstream(
      'UPSTREAM_RESPONSE_HEADERS',
      passedBackHeaders.default(() => []),
      {
        doc: `the upstream's response headers passed back to the caller besides the built-in ${UPSTREAM_LIMIT_HEADERS.map((name) => `\`${name}\``).join(', ')} and every \`ratelimit-*\` and \`x-ratelimit-*\`; an answer that took several calls gets the strictest value of each, and pages in \`CORS_ORIGINS\` may read them ([upstream](upstream.md#passed-back-to-the-caller))`,
        default: 'unset: the built-in names only',
        accepted:
          "a list of header names, matched case-insensitively and exactly (no prefixes); never `set-cookie`, a hop-by-hop header (`connection`, `keep-alive`, `te`, `trailer`, `transfer-encoding`, `upgrade`, `proxy-*`), `alt-svc`, `content-*`, the answer's caching (`cache-control`, `expires`, `age`, `vary`, `etag`, `last-modified`, `pragma`, a CDN's `*-cache-control` and `surrogate-*`), an instruction to a proxy (`x-accel-*`, `x-sendfile`), what acts on the browser (`refresh`, `clear-site-data`), trace context (`traceparent`, `tracestate`, `baggage`, any name with `trace` or `b3`), CORS (`access-control-*`), `date`, `server`, `location`, `www-authenticate`, `strict-transport-security`, or the facade's own headers (`x-request-id`, `x-facade-*`): naming one stops start-up with `UPSTREAM_RESPONSE_HEADERS: must not name <header> (<why>)`",
      },
    ),
    staleWhileRevalidate: caching(
      'UPSTREAM_STALE_WHILE_REVALIDATE',
      routeMaxAges(CACHEABLE_PATHS).default(() => ({})),
      {
        doc: "RFC 5861's `stale-while-revalidate` for each upstream read whose answers name none: past its max-age, a kept range still answers at once for this long while one call in the background refreshes it ([caching](caching.md#stale-answers))",
        default: "unset: only the upstream's own directive",
        accepted: '`path=seconds` pairs separated by commas, as `UPSTREAM_CACHE_MAX_AGE`',
      },
    ),
    staleIfError: caching(
      'UPSTREAM_STALE_IF_ERROR',
      routeMaxAges(CACHEABLE_PATHS).default(() => ({})),
      {
        doc: "RFC 5861's `stale-if-error` for each upstream read whose answers name none: past its max-age, a kept range answers for this long instead of a timeout, a reset, a 5xx or an open breaker ([caching](caching.md#stale-answers))",
        default: "unset: only the upstream's own directive",
        accepted: '`path=seconds` pairs separated by commas, as `UPSTREAM_CACHE_MAX_AGE`',
      },
    ),
  }),
  clientTokens: upstream('CLIENT_TOKENS', bearerTokens.optional(), {
    doc: "bearer tokens callers must present in service-key mode; refused without `UPSTREAM_API_KEY`, where the caller's `Authorization` goes upstream and no token would be checked",
    accepted:
      'a list of at least one token, each what a caller can send after `Bearer ` (RFC 6750 token68: letters, digits, `-._~+/`, then `=` padding)',
    secret: true,
  }),
  allowAnonymousServiceKey: upstream('ALLOW_ANONYMOUS_SERVICE_KEY', bool.default(false), {
    doc: '`true` lets service-key mode run without a client check; a `warn` line says so at every start',
    default: '`false`: refuse to start',
  }),
  forwardHeaders: upstream(
    'FORWARD_HEADERS',
    forwardHeaders.default(() => []),
    {
      doc: "request headers passed on, as they came, to every upstream call besides `Authorization` and the request id (a tenant or language header, say); nothing else of the caller's is forwarded. Pages in `CORS_ORIGINS` may send them. Only what a caller says about the business passes, never what a proxy says about the caller: since no list of proxies' headers keeps up with them, a name is judged by its shape and its words, so a proxy's new header is refused unseen",
      default: 'unset: none',
      accepted:
        "a list of header names, matched case-insensitively: `accept-language`, and `x-` names of the caller's business (`x-tenant-id`, `x-api-version`). Refused: any other name without `x-` (a standard header, or a proxy's or platform's, which name theirs so since RFC 6648: `forwarded`, `client-ip`, `true-client-ip`, `cf-*`, `fastly-*`); an `x-` name that speaks of an address (`ip`, `addr`, `host`, `port`, `proto`, `forwarded`), an identity, a credential or a trust (`user`, `email`, `principal`, `identity`, `login`, `auth`, `oidc`, `jwt`, `saml`, `token`, `session`, `cookie`, `secret`, `api-key`, `cert`, `ssl`, `role`, `group`, `claim`, `trusted`, `verified`, `internal`, `consumer`, `anonymous`, `spiffe`, `bearer`, `signature`, `creds`, `pwd`, `pass`, `otp`, `mfa`), a privilege or another identity to act as (`admin`, `sudo`, `permission`, `privilege`, `entitlement`, `acl`, `grant`, `behalf`, `run-as`, `act-as`, `delegat…`), an override of the method or the URL (`method`, `override`, `original`, `rewrite`, `url`, `path`) or trace context (`trace`, `baggage`, `b3`, `span`); the `x-` namespaces of proxies and cloud platforms (`x-amzn-*`, `x-amz-*`, `x-goog-*`, `x-ms-*`, `x-azure-*`, `x-envoy-*`, `x-istio-*`, `x-vercel-*`, `x-nf-*`, …) and names with `proxy`, `cdn`, `lb`, `edge`, `gateway`, `ingress`, `cluster`, `mesh`, `upstream` or `backend` as a word; hop-by-hop headers, `cookie`, `x-forwarded-*`, the facade's own headers (`x-facade-*`, `x-request-id`, the CSRF headers). Naming one stops start-up with `FORWARD_HEADERS: must not name <header> (<why>)`",
    },
  ),
  maxCoalescedRange: upstream('MAX_COALESCED_RANGE', int(0, 100_000).default(200), {
    doc: 'pages of one request are merged into one upstream call when the covering range is at most this many items',
  }),
  joinUpstreamCalls: upstream('JOIN_UPSTREAM_CALLS', bool.default(true), {
    doc: "an upstream read identical to one already on its way (same route, query, `Authorization` sent and `FORWARD_HEADERS` values) waits for that call's answer instead of making its own; `false` sends every call on its own ([upstream](upstream.md#shared-calls))",
  }),

  dns: z.object({
    servers: dns('DNS_SERVERS', dnsServers.optional(), {
      doc: 'resolvers for TXT look-ups',
      default: "unset: the system's",
      accepted:
        'a list of at least one `IP[:port]` entry, e.g. `1.1.1.1,[::1]:5353`; host names are refused (c-ares takes IP addresses only)',
    }),
    timeoutMs: dns('DNS_TIMEOUT_MS', int(1, 60_000).default(3_000), {
      doc: 'time allowed for one look-up, all tries together; each try gets `DNS_TIMEOUT_MS / DNS_TRIES`',
    }),
    tries: dns('DNS_TRIES', int(1, 10).default(2), { doc: 'tries per look-up' }),
    maxConcurrent: dns('DNS_MAX_CONCURRENT', int(1, 10_000).default(64), {
      doc: 'look-ups in flight in the process (each holds a resolver channel and a socket until it ends); one more is not started: its field fails at once with `RATE_LIMITED` and `extensions.retryAfter: 1`. Each worker has its own',
    }),
    cacheMaxTtlS: dns('DNS_CACHE_MAX_TTL_S', int(0, 86_400).default(300), {
      doc: 'the longest a found TXT answer is reused: for its record\'s TTL, at most this; NXDOMAIN, "no TXT record" and failures are never reused. `0` reuses nothing (and every look-up goes through c-ares). Each worker has its own',
    }),
    cacheEntries: dns('DNS_CACHE_ENTRIES', int(1, 1_000_000).default(10_000), {
      doc: 'names whose TXT answers are kept at once; past it the oldest is dropped',
    }),
  }),

  subscriptions: z.object({
    maxPerClient: limits('MAX_SUBSCRIPTIONS_PER_CLIENT', int(1, 10_000).default(5), {
      doc: 'open subscriptions one client (its bearer token, or its address without one) may hold in a process; one more is `RATE_LIMITED` with `extensions.retryAfter` ([domains](domains.md#watching-the-record))',
    }),
    maxOpen: limits('MAX_SUBSCRIPTIONS', int(1, 1_000_000).default(1_000), {
      doc: 'open subscriptions in a process, all clients together; one more is `RATE_LIMITED` with `extensions.retryAfter`. Each worker has its own',
    }),
    minIntervalMs: dns('DNS_WATCH_MIN_INTERVAL_MS', int(100, 600_000).default(5_000), {
      doc: "`Subscription.domainDnsCheck`: the first wait between two look-ups of a watched name; it doubles while nothing changes, and is never shorter than a found record's TTL",
    }),
    maxIntervalMs: dns('DNS_WATCH_MAX_INTERVAL_MS', int(100, 3_600_000).default(60_000), {
      doc: 'the longest wait between two look-ups of a watched name',
    }),
    idleLimitS: dns('DNS_WATCH_IDLE_LIMIT_S', int(1, DAY_S).default(900), {
      doc: 'a watch ends, with a last event that says so, when what DNS says has not changed for this long',
    }),
    timeLimitS: dns('DNS_WATCH_TIME_LIMIT_S', int(1, DAY_S).default(3_600), {
      doc: 'a watch ends, with a last event that says so, this long after it started, whatever happened',
    }),
  }),

  maxPageSize: limits('MAX_PAGE_SIZE', int(1, 10_000).default(100), {
    doc: 'the largest `limit` (`repositories`) and `first` (`repositoriesConnection`); more is `BAD_USER_INPUT` with no upstream call',
  }),
  maxUpstreamCalls: limits('MAX_UPSTREAM_CALLS', int(1, 10_000).default(20), {
    doc: 'upstream calls one HTTP request (a whole batch) may cause; coalesced pages count once, a retried call counts once, and each distinct domain `domainDnsCheck` looks up counts as one; past it the remaining fields fail with `UPSTREAM_BUDGET_EXCEEDED`',
  }),
  limits: z.object({
    maxDepth: limits('MAX_DEPTH', int(1, 1000).default(10), {
      doc: 'deepest selection nesting of an operation (fragments flattened; `__schema` exempt)',
    }),
    maxTokens: limits('MAX_TOKENS', int(1, 1_000_000).default(2000), {
      doc: 'lexical tokens in one document',
    }),
    maxAliases: limits('MAX_ALIASES', int(0, 10_000).default(15), {
      doc: 'aliases in one operation',
    }),
    maxDirectives: limits('MAX_DIRECTIVES', int(0, 10_000).default(50), {
      doc: 'directives in one operation',
    }),
    maxCost: limits('MAX_COST', int(1, 100_000_000).default(5_000), {
      doc: 'estimated cost of one operation, with its variables: the IBM cost spec over the `@cost` / `@listSize` of `_service { sdl }` (objects 1, scalars 0, a page or connection 10, × `limit` / `first`; [operations.md](operations.md#limits))',
    }),
    maxBodyBytes: limits('MAX_BODY_BYTES', int(1, 100 * MiB).default(MiB), {
      doc: 'largest HTTP request body; more is HTTP 413',
      default: '`1048576` (1 MiB)',
    }),
    documentCacheBytes: limits('DOCUMENT_CACHE_BYTES', int(0, 1024 * MiB).default(16 * MiB), {
      doc: "documents kept in each process's memory once parsed, with their validation errors (or the error of one that fails to parse) and their compiled queries, bounded by what they hold in the heap, least recently used out first; a document repeated within it is neither parsed nor validated again ([caching](caching.md#bounds))",
      default: '`16777216` (16 MiB)',
      accepted: '0–1073741824 (0: nothing kept)',
    }),
    batchingLimit: limits('BATCHING_LIMIT', int(0, 100).default(0), {
      doc: 'operations per batched (JSON array) request; `0` refuses batches',
    }),
    introspection: limits('INTROSPECTION', bool.default(true), {
      doc: '`false` refuses `__schema` and `__type` (GraphiQL then has no docs)',
    }),
    subgraphSdl: limits('SUBGRAPH_SDL', bool.optional(), {
      doc: 'whether `{ _service { sdl } }` (the subgraph SDL a federation gateway asks for) is answered',
      default: 'unset: the same as `INTROSPECTION`',
    }),
  }),

  rateLimit: z.object({
    points: rateLimits('RATE_LIMIT_POINTS', int(0, 1_000_000_000).default(60_000), {
      doc: 'requests per client per window; `0` turns rate limiting off',
    }),
    windowS: rateLimits('RATE_LIMIT_WINDOW_S', int(1, DAY_S).default(60), {
      doc: 'the window, in seconds',
    }),
    // Unverified tokens are free to invent, so they cannot be the only key.
    addressPoints: rateLimits('RATE_LIMIT_ADDRESS_POINTS', int(0, 1_000_000_000).optional(), {
      doc: 'requests per address per window, whatever tokens they carry (verified `CLIENT_TOKENS` excepted); `0`: no per-address ceiling',
      default: 'unset: `RATE_LIMIT_POINTS`',
    }),
    redisUrl: rateLimits('REDIS_URL', redisUrl.optional(), {
      doc: 'Redis shared by every replica: the rate-limit counters, the APQ documents and the response cache (one connection for all three); one server, a Redis Cluster from its seed nodes, or the master that Sentinel names, in the forms Apollo Router takes ([operations](operations.md#redis-rate-limits-and-apq))',
      default: 'unset: per-process memory',
      accepted:
        "`redis://[[user]:password@]host[:port][/db]` or `rediss://` (TLS); `redis-cluster://[[user]:password@]host:port[,host:port…]` or `rediss-cluster://`; `redis-sentinel://[[user]:password@]host:port[,host:port…][/db]?sentinelServiceName=NAME` or `rediss-sentinel://` (the password is the master's; `&sentinelPassword=` for the sentinels')",
      secret: true,
    }),
    redisKeyPrefix: rateLimits('REDIS_KEY_PREFIX', redisKeyPrefix.default('graphql-facade:'), {
      doc: 'with `REDIS_URL`: the start of every key the facade writes in Redis, so that two deployments can share one Redis',
      accepted:
        "at most 64 characters, without spaces or braces (`{}`: hash tags are the facade's own)",
    }),
    redisTimeoutMs: rateLimits('REDIS_TIMEOUT_MS', int(1, 10_000).default(REDIS_TIMEOUT_MS), {
      doc: 'with `REDIS_URL`: how long a request waits for one Redis command; past it the command is a miss (the rate limit counts in memory, APQ and the response cache read their memory), and after a few misses in a row Redis is skipped for a while ([operations](operations.md#redis-rate-limits-and-apq))',
    }),
    trustProxy: rateLimits('TRUST_PROXY', bool.default(false), {
      doc: "`true`: a client's address is the last `X-Forwarded-For` entry (one trusted proxy in front; an entry that is not an IP address is ignored); IPv6 addresses count by their `/64` either way",
      default: "`false`: the socket's address",
    }),
  }),

  graphiql: browsers('GRAPHIQL', bool.optional(), {
    doc: 'serve GraphiQL to browsers at `/graphql`',
    default: 'unset: `true`, `false` when `NODE_ENV=production`',
  }),
  corsOrigins: browsers('CORS_ORIGINS', origins.optional(), {
    doc: "origins whose pages may call the facade, with any client's default settings; the CSRF rule is built on it ([operations](operations.md#browsers-cors-and-csrf))",
    default: 'unset: same origin only',
    accepted:
      'a list of origins exactly as browsers send them (`https://app.example.com`: scheme, host and port, no path, no trailing slash), or `https://*.example.com` for every subdomain (not over a whole top-level domain)',
  }),
  corsAllowedHeaders: browsers(
    'CORS_ALLOWED_HEADERS',
    corsHeaders.default(() => []),
    {
      doc: 'request headers those pages may send beyond the built-in set (`authorization`, `content-type`, `accept`, `x-request-id`, `traceparent`, `tracestate`, `baggage`, `apollographql-client-name`, `apollographql-client-version` and the CSRF headers)',
      default: 'unset: the built-in set',
      accepted: 'a list of header names (RFC 9110 tokens), matched case-insensitively',
    },
  ),

  persistedDocuments: z.object({
    documents: persistedDocuments('PERSISTED_DOCUMENTS', manifestFile.optional(), {
      doc: 'path of a trusted-documents manifest: a JSON object of document id → document text, the `persisted-documents.json` that `@graphql-codegen/client-preset` writes with `persistedDocuments: true`. Read and checked once, at start-up',
      default: 'unset: no trusted documents',
      accepted:
        "a readable file holding a non-empty JSON object; each id 1–128 letters, digits or `_.:-`; each document a string that parses as GraphQL; an id of 64 hex digits, bare or after `sha256:` (the preset's default), must be the SHA-256 of its document",
    }),
    only: persistedDocuments('PERSISTED_DOCUMENTS_ONLY', bool.default(false), {
      doc: "`true`: run nothing but the manifest's documents. A document sent as text (APQ's registration included) is `PERSISTED_QUERY_ONLY` (HTTP 400), an unknown id `PERSISTED_QUERY_NOT_FOUND`; APQ is off",
      default:
        "`false`: the manifest's documents by id, and any other document as text or by APQ hash",
      accepted: 'a boolean; `true` needs `PERSISTED_DOCUMENTS`',
    }),
  }),
  apq: z.object({
    cacheBytes: persistedDocuments('APQ_CACHE_BYTES', int(0, 1024 * MiB).default(8 * MiB), {
      doc: "APQ documents kept in each process's memory, least recently used out first, bounded by their total length (hash and text); with `REDIS_URL` this is the cache in front of Redis",
      default: '`8388608` (8 MiB)',
      accepted: '0–1073741824 (0: nothing kept in memory)',
    }),
    ttlS: persistedDocuments('APQ_TTL_S', int(1, 30 * DAY_S).default(DAY_S), {
      doc: "with `REDIS_URL`: how long Redis keeps an APQ document after its last use (its upload, or a read that missed the process's memory)",
      default: '`86400` (a day)',
    }),
    redisBytes: persistedDocuments('APQ_REDIS_BYTES', int(0, 1024 * MiB).default(64 * MiB), {
      doc: "with `REDIS_URL`: the bound of APQ's own key space in Redis, counting each document's text and hash and an allowance for Redis's own overhead per entry; past it, APQ's least recently used documents are evicted, never another key ([operations](operations.md#redis-rate-limits-and-apq))",
      default: '`67108864` (64 MiB)',
      accepted: '0–1073741824 (0: nothing kept in Redis)',
    }),
  }),

  responseCache: z.object({
    enabled: caching('RESPONSE_CACHE', bool.default(true), {
      doc: "keep answers per caller for as long as their cache policy allows, and answer a repeated query from them without parsing, executing or calling upstream; an answer with no policy is never kept, so it costs nothing until a policy exists; `false` also turns off the repository list's kept ranges ([caching](caching.md#ranges))",
    }),
    maxBytes: caching('RESPONSE_CACHE_BYTES', int(0, 4096 * MiB).default(32 * MiB), {
      doc: "answers kept in each process's memory, bounded by what they hold in the heap (text, keys, records), least recently used sessions out first and one session to an eighth of it; with `REDIS_URL` answers are kept in Redis and this bounds the memory used while Redis is away. The repository list's kept ranges have a bound of their own of the same size, in memory only ([caching](caching.md#bounds))",
      default: '`33554432` (32 MiB)',
      accepted: '0–4294967296 (0: nothing kept in memory)',
    }),
    redisBytes: caching('RESPONSE_CACHE_REDIS_BYTES', int(0, 4096 * MiB).default(64 * MiB), {
      doc: "with `REDIS_URL`: the bound of the response cache's own key space in Redis, as Redis's `used_memory` grows with it (each answer's text and key and Redis's own overhead per entry); past it the answers soonest to expire are evicted, never another key, and one session keeps at most an eighth of it (at least 1 MiB). Each answer also expires with its own max-age",
      default: '`67108864` (64 MiB)',
      accepted: '0–4294967296 (0: nothing kept in Redis)',
    }),
    rangeRedisBytes: caching('RANGE_CACHE_REDIS_BYTES', int(0, 4096 * MiB).default(16 * MiB), {
      doc: "with `REDIS_URL`: the bound of the repository list's kept ranges in Redis, shared by every worker and replica, counted as `RESPONSE_CACHE_REDIS_BYTES` counts answers (with the marks of the callers' recent mutations); past it the ranges soonest to expire are evicted, and one caller keeps at most an eighth of it (at least 1 MiB). Each range also expires with its own max-age and stale windows ([caching](caching.md#ranges))",
      default: '`16777216` (16 MiB)',
      accepted: '0–4294967296 (0: nothing kept in Redis)',
    }),
  }),

  logLevel: operations('LOG_LEVEL', z.enum(LOG_LEVELS).default('info'), {
    doc: 'level of the JSON log on stdout',
    accepted: LOG_LEVELS.map((level) => `\`${level}\``).join(', '),
  }),
  shutdownGraceMs: operations('SHUTDOWN_GRACE_MS', int(0, 600_000).default(25_000), {
    doc: 'on SIGTERM or SIGINT, how long requests in flight may take to finish',
  }),
  readinessCheckUpstream: operations('READINESS_CHECK_UPSTREAM', bool.default(false), {
    doc: '`true`: `/readiness` also needs a TCP connection to the upstream',
  }),
  debugToken: operations(
    'DEBUG_TOKEN',
    z.string().trim().min(16, 'must be at least 16 characters').optional(),
    {
      doc: 'in production, a caller that sends it in `x-facade-debug` gets `extensions.upstreamCalls` (the REST calls behind its answer; see [observability.md](observability.md#the-rest-calls-behind-an-answer)); outside production every answer has it and the token is not needed',
      default: 'unset: never shown in production',
      accepted: 'at least 16 characters; never echoed in a start-up error',
      secret: true,
    },
  ),
  federatedTracing: operations('FEDERATED_TRACING', bool.default(true), {
    doc: "a request with `apollo-federation-include-trace: ftv1` (a gateway's, when it samples) gets `extensions.ftv1`, Apollo's federated trace with each field's timing and errors; a request without the header pays nothing for it. `false`: never",
  }),

  // OpenTelemetry's own variables: those that decide the facade's wiring are parsed; the SDK
  // reads the others itself (`sdkReads`).
  otel: z.object({
    endpoint: tracing('OTEL_EXPORTER_OTLP_ENDPOINT', otlpUrl.optional(), {
      doc: 'base URL of an OTLP/HTTP collector; spans go to `<endpoint>/v1/traces`',
      default: 'unset: no export',
      accepted: 'an http(s) URL; never echoed in a start-up error',
      secret: true,
    }),
    tracesEndpoint: tracing('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', otlpUrl.optional(), {
      doc: 'the full URL spans are sent to, used as given; wins over the one above',
      accepted: 'an http(s) URL; never echoed',
      secret: true,
    }),
    protocol: tracing('OTEL_EXPORTER_OTLP_PROTOCOL', otlpProtocol.default('http/protobuf'), {
      doc: 'the encoding',
      accepted: '`http/protobuf`, `http/json` (gRPC is not built in)',
    }),
    tracesProtocol: tracing('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', otlpProtocol.optional(), {
      doc: 'the encoding of the spans; wins over the one above',
      default: 'unset: `OTEL_EXPORTER_OTLP_PROTOCOL`',
      accepted: '`http/protobuf`, `http/json` (gRPC is not built in)',
    }),
    exporter: tracing('OTEL_TRACES_EXPORTER', tracesExporter.default('otlp'), {
      doc: '`none` turns export off',
      accepted: '`otlp`, `none`',
    }),
    sdkDisabled: tracing('OTEL_SDK_DISABLED', bool.default(false), {
      doc: '`true` turns export off',
    }),
    propagators: tracing('OTEL_PROPAGATORS', propagators.optional(), {
      doc: "the trace context carried from the caller to the upstream, exported or not: `tracecontext` is W3C `traceparent` and `tracestate`, `baggage` is W3C `baggage` (a caller's baggage can hold what the REST API should not see: leave it out)",
      default: '`tracecontext,baggage`',
      accepted: '`tracecontext`, `baggage`, comma-separated, or `none`',
    }),
    headers: tracing('OTEL_EXPORTER_OTLP_HEADERS', sdkReads(), {
      doc: 'headers of the export requests, such as an API key (read by the exporter)',
      accepted: '`key=value,key2=value2`, values percent-encoded; never echoed',
      secret: true,
    }),
    tracesHeaders: tracing('OTEL_EXPORTER_OTLP_TRACES_HEADERS', sdkReads(), {
      doc: 'headers of the span export requests; both apply, this one wins per key (read by the exporter)',
      accepted: '`key=value,key2=value2`, values percent-encoded; never echoed',
      secret: true,
    }),
    serviceName: tracing('OTEL_SERVICE_NAME', sdkReads(), {
      doc: '`service.name` of the spans (read by the SDK)',
      default: '`service.name` of `OTEL_RESOURCE_ATTRIBUTES`, else `graphql-rest-facade`',
      accepted: 'a name',
    }),
    resourceAttributes: tracing('OTEL_RESOURCE_ATTRIBUTES', sdkReads(), {
      doc: 'further resource attributes (`deployment.environment=prod,team=web`) (read by the SDK)',
      accepted:
        '`key=value` pairs, values percent-encoded; the SDK drops them all when one is malformed',
    }),
    sampler: tracing('OTEL_TRACES_SAMPLER', sdkReads(), {
      doc: 'which traces are recorded (read by the SDK)',
      default: "`parentbased_always_on` (the caller's decision, else all)",
      accepted:
        '`always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, `parentbased_always_off`, `parentbased_traceidratio`',
    }),
    samplerRatio: tracing('OTEL_TRACES_SAMPLER_ARG', sdkReads(), {
      doc: 'the ratio of the `traceidratio` samplers (read by the SDK)',
      default: '`1`',
      accepted: '0–1',
    }),
  }),
});

export type Settings = z.output<typeof settingsSchema>;
