import type { RequestListener } from 'node:http';
import type { Plugin } from 'graphql-yoga';
import type { Registry } from 'prom-client';
import { NO_SNIFF } from './headers.js';

/** Prometheus text and its content type: one registry's, or a whole cluster's. */
export type MetricsSource = () => Promise<{ text: string; contentType: string }>;

export const registrySource =
  (registry: Registry): MetricsSource =>
  async () => ({ text: await registry.metrics(), contentType: registry.contentType });

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

/** The same on METRICS_PORT: `GET path`, and 404 for anything else. */
export function metricsListener(source: MetricsSource, path: string): RequestListener {
  return (request, response) => {
    const { pathname } = new URL(request.url ?? '/', 'http://localhost');
    if (pathname !== path || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, NO_SNIFF).end();
      return;
    }
    source().then(
      ({ text, contentType }) =>
        response.writeHead(200, { ...NO_SNIFF, 'content-type': contentType }).end(text),
      () => response.writeHead(500, NO_SNIFF).end(),
    );
  };
}
