import type { Plugin } from 'graphql-yoga';
import { addVary } from './headers.js';

/**
 * `Cache-Control: private, no-store` on every answer, whatever its path (Yoga also serves GraphQL
 * on `/graphql/`) and type (JSON, an event stream that Yoga marks `no-cache`, multipart): answers
 * carry one caller's data, and no cache between the facade and a browser may keep one for another.
 * The one exception is an answer that carries a validator (the static GraphiQL page's ETag): it
 * holds nobody's data and is meant to be revalidated.
 *
 * `Vary: Origin` on every answer too, the CORS preflight included: what CORS allows depends on
 * the Origin, so a cache must not serve one origin's answer to another.
 */
export function useCacheControl(): Plugin {
  return {
    onResponse({ response }) {
      if (!response.headers.has('etag')) response.headers.set('cache-control', 'private, no-store');
      addVary(response.headers, 'Origin');
    },
  };
}
