import type { Plugin } from 'graphql-yoga';

/** Prometheus text and its content type: one registry's, or a whole cluster's. */
export type MetricsSource = () => Promise<{ text: string; contentType: string }>;

/** Serves the metrics as Prometheus text at `path`; answered before any GraphQL work. */
export function useMetrics(source: MetricsSource, path: string): Plugin {
  return {
    onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname !== path) return;
      return source().then(({ text, contentType }) => {
        endResponse(new fetchAPI.Response(text, { headers: { 'content-type': contentType } }));
      });
    },
  };
}
