// The kinds of value the environment holds: each parses a variable's string, and its message
// follows the variable's name in the one stderr line of a bad setting (docs/configuration.md).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parse } from 'graphql';
import { z } from 'zod';
import { parseRedisUrl, RedisUrlError } from './redis-url.js';

/** What a kind of value accepts, as the docs table shows it when a variable says nothing more. */
export const valueKinds = z.registry<{ accepted: string }>();

/** Refuses the value with `message`, in a transform or a refinement. */
function fail(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
}

const isHttpUrl = (url: URL | null): url is URL => url !== null && /^https?:$/.test(url.protocol);

export const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .register(valueKinds, {
      accepted: max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `${min}–${max}`,
    });

export const bool = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no']))
  .transform((value) => value === 'true' || value === '1' || value === 'yes')
  .register(valueKinds, { accepted: 'a boolean' });

const list = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

// c-ares takes IP addresses only, and silently wraps a port above 65535.
function isDnsServer(entry: string): boolean {
  if (isIP(entry) === 6) return true;
  const match = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d{1,5}))?$/.exec(entry);
  const port = match?.[3] === undefined ? 53 : Number(match[3]);
  return match !== null && isIP(match[1] ?? match[2] ?? '') !== 0 && port >= 1 && port <= 65535;
}
export const dnsServers = list.pipe(
  z
    .array(
      z.string().refine(isDnsServer, 'must be IP[:port] entries (host names are not accepted)'),
      'must be host[:port] entries',
    )
    .min(1, 'must name at least one server (unset it for the system resolvers)'),
);

// An origin exactly as browsers send it, or `scheme://*.host[:port]` for every subdomain of a
// host that is not a top-level domain (`https://*.com` would allow the whole web).
const origin = z.string().superRefine((value, ctx) => {
  const wildcard = /^https?:\/\/\*\./.test(value);
  const concrete = wildcard ? value.replace('://*.', '://x.') : value;
  const url = URL.parse(concrete);
  if (!concrete.includes('*') && isHttpUrl(url) && url.origin === concrete) {
    const parent = url.hostname.split('.').slice(1);
    if (!wildcard || parent.length > 1 || parent[0] === 'localhost') return;
    fail(ctx, `must not allow a whole top-level domain (${value})`);
    return;
  }
  fail(
    ctx,
    /^https?:\/\/[^/]+\/+$/.test(value)
      ? `must be origins without a trailing slash (${value.replace(/\/+$/, '')})`
      : 'must be comma-separated origins like https://app.example.com or https://*.example.com',
  );
});
export const origins = list.pipe(z.array(origin));

// No message may repeat the value, which can hold a password or a key.
export const upstreamUrl = z
  .string()
  .trim()
  .transform((value, ctx) => {
    const url = URL.parse(value);
    if (!url)
      return fail(
        ctx,
        'must be an http(s) URL such as https://api.example.com (a port, if any, 1-65535)',
      );
    if (!isHttpUrl(url)) return fail(ctx, 'must be an http(s) URL');
    if (url.hostname === '') return fail(ctx, 'must name a host');
    if (url.username !== '' || url.password !== '')
      return fail(ctx, 'must not embed credentials; use UPSTREAM_API_KEY');
    // The client joins paths to the origin and path: a query or fragment would be dropped.
    if (url.search !== '' || url.hash !== '') return fail(ctx, 'must not have a query or fragment');
    return value.replace(/\/+$/, '');
  });

export const redisUrl = z
  .string()
  .trim()
  .transform((value, ctx) => {
    try {
      parseRedisUrl(value);
      return value;
    } catch (error) {
      if (error instanceof RedisUrlError) return fail(ctx, error.message);
      throw error;
    }
  });

// Keys of one script share a hash slot by their own `{…}` tag: a prefix holding braces would
// move every key into one slot, and the prefix's own tag would win.
export const redisKeyPrefix = z
  .string()
  .regex(/^[^\s{}]{0,64}$/, 'must be at most 64 characters, without spaces or braces');

// Whether it is an address of this machine, only listen() knows.
const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
export const host = z
  .string()
  .trim()
  .refine(
    (value) => isIP(value) !== 0 || HOST_NAME.test(value),
    'must be an IP address or a host name',
  );

export const workers = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^(auto|\d{1,3})$/, 'must be a whole number from 1 to 256, or auto')
  .transform((value) => (value === 'auto' ? 'auto' : Number(value)))
  .pipe(z.union([z.literal('auto'), z.number().int().min(1).max(256)]));

// RFC 6750's token68, what a caller can send after "Bearer ": any other token could never match.
export const bearerTokens = list.pipe(
  z
    .array(
      z
        .string()
        .regex(
          /^[A-Za-z0-9\-._~+/]+=*$/,
          'must be comma-separated bearer tokens (letters, digits, -._~+/ and trailing =)',
        ),
    )
    .min(1, 'must name at least one token'),
);

// RFC 9110's token: what an HTTP header name may be.
const headerNames = list.pipe(
  z.array(
    z.string().regex(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/, 'must be comma-separated header names'),
  ),
);

/** Header names, lower-cased. */
export const corsHeaders = headerNames.transform((names) =>
  names.map((name) => name.toLowerCase()),
);

/** Header name -> why it is refused, from lists of names that share a reason. */
const refusals = (reasons: Record<string, readonly string[]>): ReadonlyMap<string, string> =>
  new Map(Object.entries(reasons).flatMap(([why, names]) => names.map((name) => [name, why])));

// RFC 9110 7.6.1: they describe one connection, never a request or an answer.
const HOP_BY_HOP = ['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

const NOT_FORWARDED = refusals({
  'a browser credential, never forwarded': ['cookie', 'set-cookie'],
  'a hop-by-hop header': HOP_BY_HOP,
  "set by the facade's HTTP client": ['host', 'content-length', 'accept-encoding', 'expect'],
  'set by the facade for each call': ['content-type', 'accept'],
  'forwarded already (or replaced by UPSTREAM_API_KEY)': ['authorization'],
  'forwarded already': ['x-request-id'],
  'forwarded already, as the trace context': ['traceparent', 'tracestate', 'baggage'],
  "describes the body the facade sends, not the caller's": ['content-encoding'],
  'an identity a caller can spoof': [
    'forwarded',
    'x-real-ip',
    'x-client-ip',
    'true-client-ip',
    'cf-connecting-ip',
  ],
  "the facade's own CSRF header": [
    'x-graphql-csrf',
    'x-graphql-yoga-csrf',
    'apollo-require-preflight',
  ],
  "the gateway's request to the facade": ['apollo-federation-include-trace'],
});

// W3C trace context and baggage, B3, and the vendors' own trace headers, by their words.
const TRACE_CONTEXT = /trace|baggage|(^|-)(b3|span|spanid|sampled)(-|$)/;

// FORWARD_HEADERS passes what a caller says about the business, never what a proxy says about the
// caller: past the table above, a name is judged by its shape and its words, so a proxy's new
// header is refused unseen (docs/configuration.md#upstream).
const SPOKEN_OF: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /(^|-)(ips?|ipv[46]|host|port|proto|scheme|via)(-|$)|addr|forwarded|clientip|realip|remoteip/,
    'an address a proxy states; a caller could claim any',
  ],
  [
    /user|email|principal|identit|login|impersonat|auth|oidc|jwt|saml|token|credential|session|cookie|passw|secret|api-?key|access-?key|cert|claim|assertion|trusted|verified|verify|internal|(^|-)(uid|sub|subject|sso|ssl|tls|mtls|dn|roles?|groups?|scopes?)(-|$)/,
    'an identity, a credential or a trust a proxy vouches for; a caller could claim any',
  ],
  [
    /override|method|rewrite|original|(^|-)(url|uri|path)(-|$)/,
    'overrides the method or the URL the upstream sees',
  ],
  [
    /consumer|anonymous|spiffe|svid|bearer|signature|hmac|(^|-)(creds?|pwd|passwd|pass|otp|totp|hotp|mfa|2fa)(-|$)/,
    'an identity, a credential or a trust a proxy vouches for; a caller could claim any',
  ],
  [
    /sudo|admin|superuser|privilege|permission|entitlement|behalf|delegat|(^|-)(acls?|grants?|run-as|act-as|acting-as|elevate)(-|$)/,
    'a privilege or another identity to act as; a caller could claim any',
  ],
  [TRACE_CONTEXT, 'trace context, which the facade sends itself'],
];

// The `x-` namespaces of proxies and cloud platforms that predate RFC 6648, and the words of
// infrastructure in any name.
const INFRASTRUCTURE =
  /^x-(amzn|amz|aws|goog|google|gfe|appengine|cloud|ms|azure|arr|iis|envoy|istio|linkerd|kong|apigee|akamai|fastly|cf|vercel|nf|netlify|heroku|fly|nginx|haproxy|varnish|traefik|squid)-|(^|-)(proxy|cdn|lb|edge|gateway|ingress|cluster|mesh|upstream|backend)(-|$)/;

/** Why FORWARD_HEADERS may not name this header, or undefined when it may. */
function notForwarded(name: string): string | undefined {
  if (name.startsWith('proxy-')) return 'a hop-by-hop header';
  if (name.startsWith('x-forwarded-')) return 'an identity a caller can spoof';
  // x-facade-debug carries DEBUG_TOKEN.
  if (name.startsWith('x-facade-')) return "the facade's own header, which may carry a secret";
  const listed = NOT_FORWARDED.get(name);
  if (listed) return listed;
  // Without `x-`: a standard header, or a proxy's or platform's named so since RFC 6648.
  if (name === 'accept-language') return undefined;
  if (!name.startsWith('x-'))
    return "a standard or a proxy's header: of the names without x-, only accept-language is forwarded";
  const words = name.replace(/[_.]/g, '-');
  for (const [spoken, why] of SPOKEN_OF) if (spoken.test(words)) return why;
  if (INFRASTRUCTURE.test(words)) return "a proxy's or a platform's own header";
  return undefined;
}

/** Header names, lower-cased, each once; one that `refused` gives a reason for stops start-up. */
const headerNamesExcept = (refused: (name: string) => string | undefined) =>
  headerNames.transform((names, ctx) => {
    const lower = [...new Set(names.map((name) => name.toLowerCase()))];
    for (const name of lower) {
      const why = refused(name);
      if (why !== undefined) return fail(ctx, `must not name ${name} (${why})`);
    }
    return lower;
  });

export const forwardHeaders = headerNamesExcept(notForwarded);

const FACADE_CACHING = "the answer's caching, which the facade decides";
const NOT_PASSED_BACK = refusals({
  "a cookie of the upstream's, never the caller's": ['set-cookie'],
  'a hop-by-hop header': HOP_BY_HOP,
  "describes the upstream's own connections": ['alt-svc'],
  [FACADE_CACHING]: ['cache-control', 'expires', 'age', 'vary', 'etag', 'last-modified', 'pragma'],
  "set by the facade's HTTP server": ['date', 'server'],
  "the upstream's own addresses": ['location'],
  "the upstream's challenge, not the facade's": ['www-authenticate'],
  "the facade's deployment decides it": ['strict-transport-security'],
  "acts on the caller's browser": ['refresh', 'clear-site-data'],
  "the facade's own header": ['x-request-id'],
});

/** Why UPSTREAM_RESPONSE_HEADERS may not name this header, or undefined when it may. */
function notPassedBack(name: string): string | undefined {
  if (name.startsWith('proxy-')) return 'a hop-by-hop header';
  // A CDN or proxy in front of the facade would obey them: keep a private answer, serve a file.
  if (name.endsWith('-cache-control') || name.startsWith('surrogate-')) return FACADE_CACHING;
  if (name.startsWith('x-accel-') || name.includes('sendfile') || name.includes('send-file'))
    return "an instruction to the facade's own proxy";
  if (TRACE_CONTEXT.test(name)) return "trace context, which the facade's tracing sets";
  if (name.startsWith('content-')) return "describes the upstream's own body";
  if (name.startsWith('access-control-')) return 'CORS, which the facade decides';
  if (name.startsWith('x-facade-')) return "the facade's own header";
  return NOT_PASSED_BACK.get(name);
}

export const passedBackHeaders = headerNamesExcept(notPassedBack);

export const otlpUrl = z
  .string()
  .trim()
  .refine(
    (value) => isHttpUrl(URL.parse(value)),
    'must be an http(s) URL such as http://localhost:4318 (gRPC is not built in)',
  );

export const otlpProtocol = z
  .string()
  .trim()
  .pipe(
    z.enum(
      ['http/protobuf', 'http/json'],
      'must be http/protobuf or http/json (gRPC is not built in)',
    ),
  );

export const tracesExporter = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['otlp', 'none'], 'must be otlp or none (the only exporters built in)'));

/** A variable the OpenTelemetry SDK reads itself: declared for the docs and the secrets, unparsed. */
export const sdkReads = () => z.string().optional();

export const propagators = list.pipe(
  z
    .array(
      z.enum(
        ['tracecontext', 'baggage', 'none'],
        'must be tracecontext, baggage or none (b3, jaeger, xray and ottrace are not built in)',
      ),
    )
    .transform((names) => [...new Set(names.filter((name) => name !== 'none'))]),
);

/** `path=seconds,...`, each path one of `paths`: a typo would otherwise cache nothing, silently. */
export const routeMaxAges = (paths: readonly string[]) =>
  z.string().transform((value, ctx) => {
    const seconds: Record<string, number> = {};
    for (const pair of value.split(',')) {
      if (pair.trim() === '') continue;
      const mark = pair.lastIndexOf('=');
      const path = mark > 0 ? pair.slice(0, mark).trim() : '';
      const raw = pair.slice(mark + 1).trim();
      if (!paths.includes(path))
        return fail(
          ctx,
          `must be path=seconds pairs separated by commas, each path one of ${paths.join(', ')}`,
        );
      if (!/^\d{1,9}$/.test(raw)) return fail(ctx, `${path}: seconds must be a whole number`);
      seconds[path] = Number(raw);
    }
    return seconds;
  });

// What @graphql-codegen/client-preset writes (`sha256:<hex>` or SHA-1 hex) or a custom hash's
// output; bounded, since it travels in URLs.
const DOCUMENT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * The trusted-documents manifest (id -> document text), checked whole at start-up: each document
 * parses, and an id of 64 hex digits (bare or after `sha256:`) is the SHA-256 of its document.
 */
export const manifestFile = z.string().transform((path, ctx): ReadonlyMap<string, string> => {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    if (error instanceof SyntaxError) return fail(ctx, 'the manifest is not JSON');
    const code = (error as { code?: unknown }).code;
    return fail(
      ctx,
      `cannot read the manifest (${typeof code === 'string' ? code : 'unreadable'})`,
    );
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return fail(ctx, 'the manifest must be a JSON object of document id -> document');
  const documents = new Map<string, string>();
  for (const [id, document] of Object.entries(json)) {
    const shown = JSON.stringify(id.slice(0, 80));
    if (!DOCUMENT_ID.test(id))
      return fail(ctx, `the manifest's id ${shown} is not a hash (1-128 letters, digits, _.:-)`);
    if (typeof document !== 'string')
      return fail(ctx, `the manifest's entry ${shown} is not a string`);
    try {
      parse(document, { noLocation: true });
    } catch {
      return fail(ctx, `the manifest's entry ${shown} is not a GraphQL document`);
    }
    const sha256 = /^(?:sha256:)?([0-9a-f]{64})$/i.exec(id)?.[1];
    if (sha256 && createHash('sha256').update(document).digest('hex') !== sha256.toLowerCase())
      return fail(ctx, `the manifest's id ${shown} is not the SHA-256 of its document`);
    documents.set(id, document);
  }
  if (documents.size === 0) return fail(ctx, 'the manifest holds no documents');
  return documents;
});
