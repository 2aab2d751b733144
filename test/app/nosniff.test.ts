import { describe, expect, it } from 'vitest';
import { metricsListener, registrySource } from '../../src/http/use-metrics.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { useHarness } from '../helpers/harness.js';
import { listen } from '../helpers/net.js';

const BASE = 'http://facade.test';
const QUERY = '{ repositories(limit: 1) { total } }';
const LARGE = '{ repositories(limit: 50) { items { id defaultBranch branches { name target } } } }';

// The GraphQL over HTTP media type, whose refusals carry their 4xx status.
const STRICT = { accept: 'application/graphql-response+json' };

const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

describe('X-Content-Type-Options: nosniff', () => {
  const h = useHarness({ config: { graphiql: true } });

  // Every kind of answer, from whichever stage writes it.
  const answers: Array<[string, () => Response | Promise<Response>, number]> = [
    ['a GraphQL answer', () => h.app.fetch(`${BASE}/graphql`, post({ query: QUERY })), 200],
    [
      'a compressed GraphQL answer',
      () => h.app.fetch(`${BASE}/graphql`, post({ query: LARGE }, { 'accept-encoding': 'br' })),
      200,
    ],
    [
      'a GraphQL answer over GET',
      () => h.app.fetch(`${BASE}/graphql?query=${encodeURIComponent(QUERY)}`),
      200,
    ],
    [
      'an upstream error',
      async () => {
        h.sandbox.setFault('GET /git/v1/repo', { status: 500, body: { message: 'down' } });
        return h.app.fetch(`${BASE}/graphql`, post({ query: QUERY }));
      },
      200,
    ],
    ['a parse error', () => h.app.fetch(`${BASE}/graphql`, post({ query: '{ nope' }, STRICT)), 400],
    [
      'a validation error',
      () => h.app.fetch(`${BASE}/graphql`, post({ query: '{ nope }' }, STRICT)),
      400,
    ],
    [
      'a refused media type',
      () =>
        h.app.fetch(`${BASE}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/xml' },
          body: QUERY,
        }),
      415,
    ],
    [
      'a body too large',
      () => h.app.fetch(`${BASE}/graphql`, post({ query: `# ${'x'.repeat(2_000_000)}\n${QUERY}` })),
      413,
    ],
    [
      'a refused cross-site form',
      () =>
        h.app.fetch(`${BASE}/graphql?query=${encodeURIComponent(QUERY)}`, {
          headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' },
        }),
      403,
    ],
    ['GraphiQL', () => h.app.fetch(`${BASE}/graphql`, { headers: { accept: 'text/html' } }), 200],
    ['health', () => h.app.fetch(`${BASE}/health`), 200],
    ['readiness', () => h.app.fetch(`${BASE}/readiness`), 200],
    ['metrics', () => h.app.fetch(`${BASE}/metrics`), 200],
    ['a path the facade does not serve', () => h.app.fetch(`${BASE}/nope`), 404],
  ];

  it.each(answers)('is on %s', async (_, send, status) => {
    const response = await send();
    expect(response.status).toBe(status);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    await response.arrayBuffer();
  });

  it('is on GraphiQL when the browser already has it (304)', async () => {
    const first = await h.app.fetch(`${BASE}/graphql`, { headers: { accept: 'text/html' } });
    const etag = first.headers.get('etag') ?? '';
    await first.arrayBuffer();
    const again = await h.app.fetch(`${BASE}/graphql`, {
      headers: { accept: 'text/html', 'if-none-match': etag },
    });
    expect(again.status).toBe(304);
    expect(again.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('is on every answer of the port of its own that METRICS_PORT opens', async () => {
    const server = await listen(metricsListener(registrySource(createMetrics().registry), '/m'));
    try {
      const origin = new URL(server.url).origin;
      for (const [path, status] of [
        ['/m', 200],
        ['/elsewhere', 404],
      ] as const) {
        const response = await fetch(`${origin}${path}`);
        expect(response.status).toBe(status);
        expect(response.headers.get('x-content-type-options')).toBe('nosniff');
        await response.arrayBuffer();
      }
      const failing = await listen(
        metricsListener(() => Promise.reject(new Error('no registry')), '/m'),
      );
      try {
        const response = await fetch(`${new URL(failing.url).origin}/m`);
        expect(response.status).toBe(500);
        expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      } finally {
        await failing.close();
      }
    } finally {
      await server.close();
    }
  });
});
