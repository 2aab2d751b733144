import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import type { Plugin, YogaServerOptions } from 'graphql-yoga';

/**
 * Any of these headers marks a request as sent by code that could set headers, which a plain
 * HTML form or <img> cannot. The first is ours; the others are what Yoga's and Apollo's clients
 * already send, so those work unchanged.
 */
export const CSRF_HEADERS = ['x-graphql-csrf', 'x-graphql-yoga-csrf', 'apollo-require-preflight'];

/**
 * Refuses "simple" requests (GET, or POST as a form or text/plain) that carry none of the headers
 * above: a browser sends those cross-site without asking, with the visitor's cookies. A POST with
 * `Content-Type: application/json`, which GraphiQL and every GraphQL client send, passes as is.
 */
export function useCsrfPrevention(): Plugin {
  return useCSRFPrevention({ requestHeaders: CSRF_HEADERS });
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
): CorsOption {
  if (!origins?.length) return false;
  const allowed = new Set(origins);
  const allowedHeaders = [...new Set([...CORS_HEADERS, ...CSRF_HEADERS, ...extraHeaders])];
  return (request: Request) => {
    const origin = request.headers.get('origin');
    if (!origin || !allowed.has(origin)) return false;
    return {
      origin: [origin],
      credentials: false,
      methods: ['GET', 'POST'],
      allowedHeaders,
      exposedHeaders: ['x-request-id', 'retry-after'],
      maxAge: 600,
    };
  };
}
