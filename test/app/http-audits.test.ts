import { createServer, type Server } from 'node:http';
import { type AuditResult, serverAudits } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { createRateLimiter } from '../../src/plugins/request/use-rate-limit.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * graphql-http's audits of the GraphQL over HTTP spec, against the app behind node:http with
 * every production plugin on (CSRF, limits, a rate limit large enough for the audits).
 */
describe('GraphQL over HTTP conformance', () => {
  let h: Harness;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    h = await createHarness();
    const rateLimiter = await createRateLimiter({
      points: 10_000,
      windowS: 60,
      redisUrl: undefined,
    });
    server = createServer(createApp({ config: h.config, client: h.client, rateLimiter }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/graphql`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await h.close();
  });

  it('passes every audit (with the CSRF header a non-browser client sends)', async () => {
    // GETs carry no content type; the CSRF plugin needs its header on them, as documented.
    const fetchFn = (input: RequestInfo | URL, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      headers.set('x-graphql-csrf', '1');
      return fetch(input, { ...init, headers });
    };
    const audits = serverAudits({ url, fetchFn });
    expect(audits.length).toBeGreaterThanOrEqual(61);
    const results: AuditResult[] = [];
    for (const audit of audits) results.push(await audit.fn());
    const failures = results
      .filter((result) => result.status !== 'ok')
      .map(
        (result) => `${result.status} ${result.name}: ${'reason' in result ? result.reason : ''}`,
      );
    expect(failures).toEqual([]);
  });

  it('refuses GETs without the CSRF header, as a browser form would send them', async () => {
    const response = await fetch(`${url}?query=${encodeURIComponent('{ __typename }')}`);
    expect(response.status).toBe(403);
  });
});
