import type { Plugin } from 'graphql-yoga';
import type { Health } from './health.js';

/**
 * Answers `path` with 200 when ready, 503 when not, in a small JSON body with the state of what
 * the process does without (`{"ready":true,"redis":"unavailable"}`); while draining it marks
 * every answer `Connection: close`, so keep-alive clients reconnect elsewhere and the server can
 * finish closing instead of waiting on their idle sockets.
 *
 * Not Yoga's useReadinessCheck: it matches a URLPattern (a polyfill on Node 20) against the URL of
 * every request, not only the probe's.
 */
export function useReadiness(health: Health, path: string): Plugin {
  return {
    onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname !== path) return;
      return health.ready().then((ready) => {
        endResponse(
          fetchAPI.Response.json({ ready, ...health.report() }, { status: ready ? 200 : 503 }),
        );
      });
    },
    onResponse({ response }) {
      if (health.draining) response.headers.set('connection', 'close');
    },
  };
}
