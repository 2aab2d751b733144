import type { Plugin } from 'graphql-yoga';
import type { Health } from './health.js';

/**
 * Draining marks every answer `Connection: close`, so keep-alive clients reconnect elsewhere. Not
 * Yoga's useReadinessCheck: it matches a URLPattern against every request's URL.
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
