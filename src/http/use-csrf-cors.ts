import type { Plugin, YogaServerOptions } from 'graphql-yoga';
import { FacadeError } from '../errors.js';
import { passedBackNames } from '../upstream/response-headers.js';

/**
 * Any of these headers marks a request as sent by code that could set headers, which a plain
 * HTML form or <img> cannot. The first is ours; the others are what Yoga's and Apollo's clients
 * send when told to, so those keep working. No client needs one for the rule below.
 */
export const CSRF_HEADERS = ['x-graphql-csrf', 'x-graphql-yoga-csrf', 'apollo-require-preflight'];

/** Bodies a form or `fetch` may send cross-site without a preflight (the Fetch standard's list). */
const SIMPLE_BODY_TYPES = [
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'text/plain',
];

/**
 * Whether the browser asked the facade before sending this request: a POST whose Content-Type a
 * form cannot send (application/json, say) is sent cross-origin only after a CORS preflight the
 * facade answered for an allowed origin.
 */
function wasPreflighted(request: Request): boolean {
  if (request.method !== 'POST') return false;
  const type = request.headers.get('content-type')?.trim().toLowerCase();
  return !!type && !SIMPLE_BODY_TYPES.some((simple) => type.startsWith(simple));
}

export type CsrfVerdict = 'pass' | 'refuse';

/** Whether a page of this origin may call the facade (CORS_ORIGINS). */
export type OriginMatcher = (origin: string) => boolean;

const SUBDOMAIN =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * CORS_ORIGINS as a matcher: exact origins, and `scheme://*.host[:port]` for any subdomain of
 * `host` at any depth (never `host` itself), with the same scheme and port. Config has already
 * checked the entries' form.
 */
export function createOriginMatcher(origins: readonly string[] = []): OriginMatcher {
  const exact = new Set<string>();
  const wildcards: Array<{ prefix: string; suffix: string }> = [];
  for (const entry of origins) {
    const star = entry.indexOf('://*.');
    if (star === -1) exact.add(entry);
    // `https://*.example.com:8443`: the scheme before the star, `.example.com:8443` after it.
    else wildcards.push({ prefix: entry.slice(0, star + 3), suffix: entry.slice(star + 4) });
  }
  return (origin) => {
    if (exact.has(origin)) return true;
    for (const { prefix, suffix } of wildcards) {
      if (!origin.startsWith(prefix) || !origin.endsWith(suffix)) continue;
      // What the star stands for: one or more host labels, so never a port, a path or a userinfo.
      const labels = origin.slice(prefix.length, origin.length - suffix.length);
      if (SUBDOMAIN.test(labels)) return true;
    }
    return false;
  };
}

/**
 * The CSRF rule, a pure function of the request's headers and the CORS_ORIGINS allowlist:
 *
 * 1. With Fetch Metadata (`Sec-Fetch-Site`: every current browser sends it, and a page cannot
 *    forge it):
 *    - `same-origin` or `none` (the facade's own page, an address typed by the user) passes;
 *    - anything else (`same-site`, `cross-site`) passes only when `Origin` is in CORS_ORIGINS,
 *      `Sec-Fetch-Mode` is `cors` and `Sec-Fetch-Dest` is `empty` (or absent): a `fetch` or XHR
 *      from an allowed page. A form POST (`navigate`), an <img> or <script> GET and a `no-cors`
 *      fetch are refused, whatever their origin.
 * 2. Without Fetch Metadata (curl, servers, gateways, browsers too old to send it):
 *    - a GET with no `Origin` passes (curl, scripts, servers; Node's fetch sends Sec-Fetch-Mode
 *      but no Sec-Fetch-Site, which browsers always send together): a query over GET changes nothing,
 *      and a page's <img> or <script> cannot attach the Authorization header the facade reads,
 *      so it runs with no one's credentials and its answer is unreadable to the page;
 *    - `Origin` in CORS_ORIGINS passes;
 *    - a request that was preflighted (a POST with a Content-Type a form cannot send, such as
 *      `application/json`) passes: a browser sends it cross-origin only to an allowed origin;
 *    - a simple request (a GET, or a POST as form data or text/plain) passes only with one of
 *      CSRF_HEADERS, which a page cannot add without a preflight.
 *
 * Methods other than GET and POST are left to Yoga (405), and a mutation is never run over GET
 * whatever this rule says (Yoga's own check, also 405).
 */
export function csrfVerdict(request: Request, isAllowed: OriginMatcher): CsrfVerdict {
  if (request.method !== 'GET' && request.method !== 'POST') return 'pass';
  const { headers } = request;
  const origin = headers.get('origin');
  const allowedOrigin = origin !== null && isAllowed(origin);
  const site = headers.get('sec-fetch-site');
  if (site !== null) {
    if (site === 'same-origin' || site === 'none') return 'pass';
    const dest = headers.get('sec-fetch-dest');
    return allowedOrigin &&
      headers.get('sec-fetch-mode') === 'cors' &&
      (dest === null || dest === 'empty')
      ? 'pass'
      : 'refuse';
  }
  if (request.method === 'GET' && origin === null) return 'pass';
  if (allowedOrigin || wasPreflighted(request)) return 'pass';
  return CSRF_HEADERS.some((name) => headers.has(name)) ? 'pass' : 'refuse';
}

/**
 * Refuses, before the body is read and before any upstream call, what a page on another site
 * could make a visitor's browser send (see csrfVerdict). The answer is a 403 with a fixed message:
 * it says nothing of the request or the allowlist, and carries no CORS header for such a page.
 */
export function useCsrfPrevention(isAllowed: OriginMatcher): Plugin {
  return {
    onRequestParse({ request }) {
      if (csrfVerdict(request, isAllowed) === 'pass') return;
      throw new FacadeError('BAD_USER_INPUT', 'Cross-site request refused', {
        http: { status: 403 },
      });
    },
  };
}

/**
 * What browsers may send besides the CSRF headers: the credential, the body's type, the request id,
 * the W3C trace context that browser tracing (OpenTelemetry web) adds, and Apollo's client
 * identity headers, which Apollo Client sends when configured with a name and version.
 */
export const CORS_HEADERS = [
  'authorization',
  'content-type',
  'accept',
  'x-request-id',
  'traceparent',
  'tracestate',
  'baggage',
  'apollographql-client-name',
  'apollographql-client-version',
];

/**
 * What those pages may read of an answer besides the CORS-safelisted headers: the request id, the
 * facade's own rate limit (`Retry-After`, `RateLimit`, `RateLimit-Policy`), and the upstream's
 * headers passed back (src/upstream/response-headers.ts).
 */
const EXPOSED_HEADERS = ['x-request-id', 'retry-after', 'ratelimit', 'ratelimit-policy'];

type CorsOption = YogaServerOptions<Record<string, unknown>, Record<string, unknown>>['cors'];

/**
 * Same origin only unless origins are configured: then exactly those are allowed, one at a time
 * (never `*`, never an echo of whatever Origin came), without credentials, since the facade uses
 * the Authorization header and no cookies. Yoga's default echoes any Origin with
 * `Access-Control-Allow-Credentials: true`, which lets every website call in with a visitor's
 * cookies; `false` turns that off.
 */
export function corsOptions(
  origins: readonly string[] | undefined,
  /** CORS_ALLOWED_HEADERS: allowed on top of the built-in set. */
  extraHeaders: readonly string[] = [],
  /** UPSTREAM_RESPONSE_HEADERS: exposed with the upstream's built-in ones. */
  passedBack: readonly string[] = [],
): CorsOption {
  if (!origins?.length) return false;
  const isAllowed = createOriginMatcher(origins);
  const allowedHeaders = [...new Set([...CORS_HEADERS, ...CSRF_HEADERS, ...extraHeaders])];
  const exposedHeaders = [...new Set([...EXPOSED_HEADERS, ...passedBackNames(passedBack)])];
  return (request: Request) => {
    const origin = request.headers.get('origin');
    if (!origin || !isAllowed(origin)) return false;
    return {
      origin: [origin],
      credentials: false,
      methods: ['GET', 'POST'],
      allowedHeaders,
      exposedHeaders,
      maxAge: 600,
    };
  };
}
