import { readFileSync } from 'node:fs';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { Kind, parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { tabsPath, writtenTabs } from '../../scripts/graphiql-tabs.js';
import { loadConfig } from '../../src/config/load.js';
import { graphiqlTabs } from '../../src/http/graphiql-tabs.js';
import { schema } from '../../src/schema/index.js';
import { useDnsHarness } from '../helpers/harness.js';

const live = useDnsHarness();

describe('GraphiQL tabs', () => {
  it("are the example's operations, as `npm run example:web:codegen` writes them", () => {
    // Run `npm run example:web:codegen` and commit the result when this fails. StrykerJS's sandbox
    // (`npm run test:mutation`) starts every source file with this line: the file is the same.
    const written = readFileSync(tabsPath, 'utf8').replace(/^\/\/ @ts-nocheck\r?\n/, '');
    expect(written).toBe(writtenTabs());
  });

  it('hold valid operations of root fields the schema serves', () => {
    const documents = graphiqlTabs.map((query) => parse(query));
    for (const document of documents) expect(validate(schema, document)).toEqual([]);
    const selected = documents.flatMap((document) =>
      document.definitions.flatMap((definition) =>
        definition.kind === Kind.OPERATION_DEFINITION
          ? definition.selectionSet.selections.map((field) =>
              field.kind === Kind.FIELD ? field.name.value : '',
            )
          : [],
      ),
    );
    const rootFields = [
      schema.getQueryType(),
      schema.getMutationType(),
      schema.getSubscriptionType(),
    ]
      .flatMap((type) => Object.keys(type?.getFields() ?? {}))
      // Federation's, for a gateway.
      .filter((name) => !name.startsWith('_'));
    // A field without a tab is fine (the example need not use it); a tab of no field is not.
    expect(selected.filter((name) => !rootFields.includes(name))).toEqual([]);
    expect(selected.length).toBeGreaterThan(0);
  });

  it('run as they open, with their variables left out', async () => {
    // The subscription's default code is published, so its watch ends with its first event.
    live.dns.setTxt('_service_custom_hostname.example.com', [
      'svc-verify-abc123',
      'svc-verify-example',
    ]);
    for (const query of graphiqlTabs) {
      if (!/^subscription /m.test(query)) {
        const response = await live.h.gql(query);
        expect(response.errors, query).toBeUndefined();
        continue;
      }
      // As GraphiQL runs a subscription: over server-sent events.
      const response = await live.h.app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ query }),
      });
      const events = (await response.text()).match(/^data: \{.*$/gm) ?? [];
      expect(events, query).toEqual([expect.stringContaining('"matches":true')]);
    }
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
    // As browsers and caches send it: a list, weak or not.
    const listed = await page(live.h.app, { 'if-none-match': `"other", W/${etag}` });
    expect(listed.status).toBe(304);
  });

  it('gives each encoding its own ETag, and 304 only for the one it would send', async () => {
    const tags = new Map<string, string>();
    for (const encoding of ['br', 'gzip', 'identity']) {
      const response = await page(live.h.app, { 'accept-encoding': encoding });
      tags.set(encoding, response.headers.get('etag') as string);
    }
    expect(new Set(tags.values()).size).toBe(3);
    const plain = await page(live.h.app, { 'if-none-match': tags.get('br') as string });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-encoding')).toBeNull();
    const br = await page(live.h.app, {
      'accept-encoding': 'gzip, br',
      'if-none-match': tags.get('br') as string,
    });
    expect(br.status).toBe(304);
  });

  it.each([
    ['br;q=0, gzip', 'gzip'],
    ['gzip;q=0, br;q=0', null],
    ['*;q=0.5', 'br'],
    ['*, br;q=0', 'gzip'],
    ['identity', null],
  ])('reads Accept-Encoding %j as %s', async (acceptEncoding, expected) => {
    const response = await page(live.h.app, { 'accept-encoding': acceptEncoding });
    expect(response.headers.get('content-encoding')).toBe(expected);
  });

  it('serves the page to a reload that carries the query GraphiQL keeps in the address', async () => {
    const response = await page(live.h.app, {}, '/graphql?query=%7B__typename%7D');
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('<title>GraphQL facade</title>');
  });

  it('keeps the tabs where they are laid out, so a click lands on the tab it was aimed at', async () => {
    const html = await (await page(live.h.app)).text();
    expect(html).toMatch(/<style>\.graphiql-tab\{transform:none!important\}<\/style><\/head>/);
  });

  it('sends the worked-out operation name only when it is in the document being run', async () => {
    const html = await (await page(live.h.app)).text();
    expect(html).toContain('operationName:f??(c&&E.split(');
    expect(html).not.toContain('operationName:f??c}');
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
    for (const config of [{ graphiql: false }, loadConfig({ NODE_ENV: 'production' })]) {
      const app = live.h.createApp({ config: { graphiql: config.graphiql } });
      const response = await page(app);
      expect(response.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
    }
    expect(loadConfig({ NODE_ENV: 'production', GRAPHIQL: 'true' }).graphiql).toBe(true);
  });
});
