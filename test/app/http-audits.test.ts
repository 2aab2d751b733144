import { type AuditResult, serverAudits } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/plugins/request/use-rate-limit.js';
import { useHarness } from '../helpers/harness.js';
import { type Listening, listen } from '../helpers/net.js';

/**
 * graphql-http's audits of the GraphQL over HTTP spec, against the app behind node:http with
 * every production plugin on (CSRF, limits, a rate limit large enough for the audits).
 */
describe('GraphQL over HTTP conformance', () => {
  const h = useHarness();
  let server: Listening;
  let url: string;

  beforeAll(async () => {
    const rateLimiter = await createRateLimiter({
      points: 10_000,
      windowS: 60,
      redisUrl: undefined,
    });
    server = await listen(h.createApp({ rateLimiter }));
    url = server.url;
  });
  afterAll(() => server.close());

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
