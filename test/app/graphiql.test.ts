import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { graphiqlTabs } from '../../src/plugins/request/graphiql-tabs.js';
import { schema } from '../../src/schema/index.js';
import { useDnsHarness } from '../helpers/harness.js';

const live = useDnsHarness();

describe('GraphiQL tabs', () => {
  it('includes a valid, runnable domainDnsCheck tab', async () => {
    const tab = graphiqlTabs.find((candidate) => candidate.query.includes('domainDnsCheck('));
    expect(tab).toBeDefined();
    const { query, variables } = tab as { query: string; variables: string };
    expect(validate(schema, parse(query))).toEqual([]);
    live.dns.setTxt('_service_custom_hostname.example.com', ['svc-verify-abc123']);
    const response = await live.h.gql<{ domainDnsCheck: unknown }>(query, JSON.parse(variables));
    expect(response.errors).toBeUndefined();
    expect(response.data?.domainDnsCheck).toMatchObject({
      host: '_service_custom_hostname.example.com',
      matches: false,
      error: null,
    });
  });
});

describe('the GraphiQL page', () => {
  const page = async (
    app: typeof live.h.app,
    headers: Record<string, string> = {},
    path = '/graphql',
  ): Promise<Response> =>
    app.fetch(`http://facade.test${path}`, { headers: { accept: 'text/html', ...headers } });

  it('serves one built page with an ETag, and 304 to a browser that has it', async () => {
    const first = await page(live.h.app);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await first.text();
    expect(html).toContain('<title>GraphQL facade</title>');
    expect(html).toContain('domainDnsCheck');
    const etag = first.headers.get('etag') as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect(first.headers.get('cache-control')).toBe('no-cache');

    const again = await page(live.h.app, {}, '/graphql/');
    expect(again.headers.get('etag')).toBe(etag);
    const revalidated = await page(live.h.app, { 'if-none-match': etag });
    expect(revalidated.status).toBe(304);
    expect(await revalidated.text()).toBe('');
  });

  it.each([
    ['br', brotliDecompressSync],
    ['gzip', gunzipSync],
  ])('sends the page compressed with %s when the browser accepts it', async (encoding, decode) => {
    const plain = Buffer.from(await (await page(live.h.app)).arrayBuffer());
    const response = await page(live.h.app, { 'accept-encoding': `${encoding}, deflate` });
    expect(response.headers.get('content-encoding')).toBe(encoding);
    expect(response.headers.get('vary')).toMatch(/Accept-Encoding/);
    const body = Buffer.from(await response.arrayBuffer());
    expect(body.length).toBeLessThan(plain.length / 3);
    expect(decode(body).equals(plain)).toBe(true);
  });

  it('is off with GRAPHIQL=false, and by default in production', async () => {
    for (const config of [
      { graphiql: false },
      loadConfig({ NODE_ENV: 'production', SANDBOX: 'true' }),
    ]) {
      const app = live.h.createApp({ config: { graphiql: config.graphiql } });
      const response = await page(app);
      expect(response.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
    }
    expect(loadConfig({ NODE_ENV: 'production', SANDBOX: 'true', GRAPHIQL: 'true' }).graphiql).toBe(
      true,
    );
  });
});
