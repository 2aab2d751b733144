import type { Plugin } from 'graphql-yoga';
import type { Registry } from 'prom-client';

/** Serves the registry as Prometheus text at `path`; answered before any GraphQL work. */
export function useMetrics(registry: Registry, path: string): Plugin {
  return {
    onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname !== path) return;
      return registry.metrics().then((text) => {
        endResponse(
          new fetchAPI.Response(text, { headers: { 'content-type': registry.contentType } }),
        );
      });
    },
  };
}
