import { type AuditResult, serverAudits } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/security/use-rate-limit.js';
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

  it('passes every audit, as a plain client with no browser headers', async () => {
    const audits = serverAudits({ url });
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

  it('refuses a GET as a form on another site sends it, and serves a plain one', async () => {
    const query = `${url}?query=${encodeURIComponent('{ __typename }')}`;
    const form = await fetch(query, {
      headers: {
        'sec-fetch-site': 'cross-site',
        'sec-fetch-mode': 'navigate',
        'sec-fetch-dest': 'document',
      },
    });
    expect(form.status).toBe(403);
    expect((await fetch(query)).status).toBe(200);
  });
});
