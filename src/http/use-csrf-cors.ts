// The CSRF rule and CORS (docs/operations.md#browsers-cors-and-csrf). CORS is Yoga's, given a
// function of the request; the CSRF rule is the facade's own: Yoga's CSRF prevention would require
// a header of every client, where this rule lets mainstream clients through with none.
import type { Plugin, YogaServerOptions } from 'graphql-yoga';
import { FacadeError } from '../errors.js';
import { passedBackNames } from '../upstream/response-headers.js';

/** Headers only code can set: ours, then Yoga's and Apollo's. */
export const CSRF_HEADERS = ['x-graphql-csrf', 'x-graphql-yoga-csrf', 'apollo-require-preflight'];

/** Bodies a form or `fetch` may send cross-site without a preflight (the Fetch standard's list). */
const SIMPLE_BODY_TYPES = [
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'text/plain',
];

/** A POST of a type a form cannot send: a browser sends it cross-origin only after a preflight. */
function wasPreflighted(request: Request): boolean {
  if (request.method !== 'POST') return false;
  const type = request.headers.get('content-type')?.trim().toLowerCase();
  return !!type && !SIMPLE_BODY_TYPES.some((simple) => type.startsWith(simple));
}

/** Whether a page of this origin may call the facade (CORS_ORIGINS). */
export type OriginMatcher = (origin: string) => boolean;

const SUBDOMAIN =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Exact origins, and `scheme://*.host[:port]` for any subdomain of `host` (not `host`). */
export function createOriginMatcher(origins: readonly string[] = []): OriginMatcher {
  const exact = new Set<string>();
  const wildcards: Array<{ prefix: string; suffix: string }> = [];
  for (const entry of origins) {
    const star = entry.indexOf('://*.');
    if (star === -1) exact.add(entry);
    else wildcards.push({ prefix: entry.slice(0, star + 3), suffix: entry.slice(star + 4) });
  }
  return (origin) => {
    if (exact.has(origin)) return true;
    for (const { prefix, suffix } of wildcards) {
      if (!origin.startsWith(prefix) || !origin.endsWith(suffix)) continue;
      // The star stands for host labels only: never a port, a path or a userinfo.
      const labels = origin.slice(prefix.length, origin.length - suffix.length);
      if (SUBDOMAIN.test(labels)) return true;
    }
    return false;
  };
}

/**
 * The CSRF rule, a pure function of the request's headers and CORS_ORIGINS: Fetch Metadata when
 * the browser sends it, else Origin, the preflight and CSRF_HEADERS. Other methods are Yoga's.
 */
export function csrfVerdict(request: Request, isAllowed: OriginMatcher): 'pass' | 'refuse' {
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

/** A refusal says nothing of the request or the allowlist. */
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

/** Besides the CSRF headers (docs/configuration.md#browsers). */
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

/** Besides the upstream's headers passed back (src/upstream/response-headers.ts). */
const EXPOSED_HEADERS = ['x-request-id', 'retry-after', 'ratelimit', 'ratelimit-policy'];

type CorsOption = YogaServerOptions<Record<string, unknown>, Record<string, unknown>>['cors'];

/**
 * Same origin only unless origins are configured; then each allowed origin alone, never `*` nor
 * credentials (Yoga's default echoes any Origin with credentials).
 */
export function corsOptions(
  origins: readonly string[] | undefined,
  /** CORS_ALLOWED_HEADERS. */
  extraHeaders: readonly string[] = [],
  /** UPSTREAM_RESPONSE_HEADERS. */
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
