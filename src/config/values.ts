// The kinds of value the environment holds: each parses a variable's string, and its messages
// follow the variable's name in the one line of a start-up error.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parse } from 'graphql';
import { z } from 'zod';

/** What a kind of value accepts, as the docs table shows it when a variable says nothing more. */
export const valueKinds = z.registry<{ accepted: string }>();

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

// c-ares takes IP addresses only (a host name would need a resolver to resolve the resolver):
// 1.2.3.4, 1.2.3.4:5353, ::1, [::1]:5353. It silently wraps a port above 65535, so check it here.
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
export const origins = list.pipe(z.array(origin));

// Parsed by hand, not with z.url(): a value `new URL` refuses must become an issue, never a
// TypeError, and no message may repeat the value, which can hold a password or a key.
export const upstreamUrl = z
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

export const redisUrl = z
  .string()
  .trim()
  .pipe(z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' }));

// An IP address or a DNS host name; whether it is an address of this machine, only listen() knows.
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

// RFC 6750's token68: what a caller can send after "Bearer ". Anything else could never match.
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
export const bearerTokens = list.pipe(
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
);

// RFC 9110's token: what an HTTP header name may be.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const headerNames = list.pipe(
  z.array(z.string().regex(HEADER_NAME, 'must be comma-separated header names')),
);

/** Header names, lower-cased. */
export const corsHeaders = headerNames.transform((names) =>
  names.map((name) => name.toLowerCase()),
);

// RFC 9110 7.6.1: they describe one connection, never a request or an answer.
const HOP_BY_HOP: Record<string, string> = Object.fromEntries(
  ['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade'].map((name) => [
    name,
    'a hop-by-hop header',
  ]),
);

// Headers FORWARD_HEADERS may never name, and why: the browser's credentials, hop-by-hop headers
// (RFC 9110 7.6.1), and what the facade's own HTTP client or rules decide for each call.
const NOT_FORWARDED: Record<string, string> = {
  cookie: 'a browser credential, never forwarded',
  'set-cookie': 'a browser credential, never forwarded',
  ...HOP_BY_HOP,
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

// FORWARD_HEADERS carries what a caller says about the business (a tenant, a language, an API
// version), never what a proxy says about the caller. No list of proxies' headers keeps up with
// them, so past the table above a name is judged by its shape and its words.

// The only standard header forwarded: content negotiation that the upstream may honour. Any other
// name without `x-` is a standard header with a meaning to HTTP, or a proxy's or a platform's,
// which name theirs without `x-` since RFC 6648 (`true-client-ip`, `cf-*`, `fastly-*`).
const STANDARD_FORWARDED = new Set(['accept-language']);

// What an `x-` name must not speak of, and why. A proxy's header is read by name, so its name
// says what it carries: these words refuse the ones no list has yet.
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
  [/trace|(^|-)(b3|span|spanid|sampled)(-|$)/, 'trace context, which the facade sends itself'],
];

// The `x-` namespaces of proxies and cloud platforms that predate RFC 6648, and the words of
// infrastructure in any name.
const INFRASTRUCTURE =
  /^x-(amzn|amz|aws|goog|google|gfe|appengine|cloud|ms|azure|arr|iis|envoy|istio|linkerd|kong|apigee|akamai|fastly|cf|vercel|nf|netlify|heroku|fly|nginx|haproxy|varnish|traefik|squid)-|(^|-)(proxy|cdn|lb|edge|gateway|ingress|cluster|mesh|upstream|backend)(-|$)/;

/** Why FORWARD_HEADERS may not name this header, or undefined when it may. */
function notForwarded(name: string): string | undefined {
  if (name.startsWith('proxy-')) return 'a hop-by-hop header';
  if (name.startsWith('x-forwarded-')) return 'an identity a caller can spoof';
  // x-facade-debug carries DEBUG_TOKEN; every x-facade-* header is the facade's own.
  if (name.startsWith('x-facade-')) return "the facade's own header, which may carry a secret";
  if (Object.hasOwn(NOT_FORWARDED, name)) return NOT_FORWARDED[name];
  if (STANDARD_FORWARDED.has(name)) return undefined;
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
      if (why === undefined) continue;
      ctx.addIssue({ code: 'custom', message: `must not name ${name} (${why})` });
      return z.NEVER;
    }
    return lower;
  });

export const forwardHeaders = headerNamesExcept(notForwarded);

// Headers UPSTREAM_RESPONSE_HEADERS may never name, and why: what would set state in the caller's
// browser, what describes the upstream's own connection or body, and what the facade decides for
// its answer (caching, CORS, its own headers).
const NOT_PASSED_BACK: Record<string, string> = {
  'set-cookie': "a cookie of the upstream's, never the caller's",
  ...HOP_BY_HOP,
  'alt-svc': "describes the upstream's own connections",
  'cache-control': "the answer's caching, which the facade decides",
  expires: "the answer's caching, which the facade decides",
  age: "the answer's caching, which the facade decides",
  vary: "the answer's caching, which the facade decides",
  etag: "the answer's caching, which the facade decides",
  'last-modified': "the answer's caching, which the facade decides",
  pragma: "the answer's caching, which the facade decides",
  date: "set by the facade's HTTP server",
  server: "set by the facade's HTTP server",
  location: "the upstream's own addresses",
  'www-authenticate': "the upstream's challenge, not the facade's",
  'strict-transport-security': "the facade's deployment decides it",
  'x-request-id': "the facade's own header",
};

/** Why UPSTREAM_RESPONSE_HEADERS may not name this header, or undefined when it may. */
function notPassedBack(name: string): string | undefined {
  if (name.startsWith('proxy-')) return 'a hop-by-hop header';
  if (name.startsWith('content-')) return "describes the upstream's own body";
  if (name.startsWith('access-control-')) return 'CORS, which the facade decides';
  if (name.startsWith('x-facade-')) return "the facade's own header";
  return Object.hasOwn(NOT_PASSED_BACK, name) ? NOT_PASSED_BACK[name] : undefined;
}

export const passedBackHeaders = headerNamesExcept(notPassedBack);

export const otlpUrl = z
  .string()
  .trim()
  .refine((value) => {
    try {
      return /^https?:$/.test(new URL(value).protocol);
    } catch {
      return false;
    }
  }, 'must be an http(s) URL such as http://localhost:4318 (gRPC is not built in)');

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

/**
 * An OpenTelemetry variable the SDK reads itself, from the same environment: declared for the
 * docs (and, for a secret, to keep it out of start-up errors), passed through unparsed.
 */
export const sdkReads = () => z.string().optional();

// OTEL_PROPAGATORS: the W3C propagators @opentelemetry/core has; `none` carries no context.
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

/**
 * `path=seconds,...`: how long the answers of each upstream read may be kept when the upstream
 * itself says nothing. Only the reads of endpoints.ts can be named: a typo would otherwise cache
 * nothing, silently.
 */
export const routeMaxAges = (paths: readonly string[]) =>
  z.string().transform((value, ctx) => {
    const out: Record<string, number> = {};
    for (const pair of value.split(',')) {
      if (pair.trim() === '') continue;
      const mark = pair.lastIndexOf('=');
      const path = mark > 0 ? pair.slice(0, mark).trim() : '';
      const raw = mark > 0 ? pair.slice(mark + 1).trim() : '';
      if (!paths.includes(path)) {
        ctx.addIssue({
          code: 'custom',
          message: `must be path=seconds pairs separated by commas, each path one of ${paths.join(', ')}`,
        });
        return z.NEVER;
      }
      if (!/^\d{1,9}$/.test(raw)) {
        ctx.addIssue({
          code: 'custom',
          message: `${path}: seconds must be a whole number`,
        });
        return z.NEVER;
      }
      out[path] = Number(raw);
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
export const manifestFile = z.string().transform((path, ctx): ReadonlyMap<string, string> => {
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
