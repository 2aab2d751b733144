import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getIntrospectionQuery } from 'graphql';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.js';
import {
  createHarness,
  type Harness,
  postGraphQL,
  upstreamRequests,
  useHarness,
} from '../helpers/harness.js';
import { listen } from '../helpers/net.js';

const REPOS = '{ repositories(limit: 2) { items { id } } }';
const FULL_PAGE = `repositoriesConnection(first: 100) { totalCount
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  edges { cursor node { id defaultBranch branches { name target isDefault }
    branch(name: "main") { name target isDefault } tags { name target message }
    tag(name: "v1") { name target message } } } }`;

describe('limits', () => {
  const h = useHarness();

  const expectRefused = (
    response: Awaited<ReturnType<Harness['gql']>>,
    code: string,
    message: RegExp,
  ) => {
    expect(response.errors?.[0]?.extensions.code).toBe(code);
    expect(response.errors?.[0]?.message).toMatch(message);
    expect(response.data ?? undefined).toBeUndefined();
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  };

  it('refuses a document deeper than MAX_DEPTH (default 10)', async () => {
    // Introspection nests without end; `__type` is not exempt, only `__schema`.
    const deep = `{ __type(name: "Query") { ${'fields { type { '.repeat(5)}name${' } }'.repeat(5)} } }`;
    const response = await h.gql(deep);
    expect(response.status).toBe(400);
    expectRefused(response, 'GRAPHQL_VALIDATION_FAILED', /depth limit of 10 exceeded/i);
  });

  it('refuses a document of more than MAX_TOKENS tokens (default 2000)', async () => {
    const response = await h.gql(`{ repositories { items { ${'id '.repeat(2100)} } } }`);
    expect(response.status).toBe(400);
    expectRefused(response, 'GRAPHQL_VALIDATION_FAILED', /token limit of 2000 exceeded/i);
  });

  it('refuses more than MAX_ALIASES aliases (default 15) and allows five of one field', async () => {
    const aliases = (n: number) =>
      `{ ${Array.from({ length: n }, (_, i) => `a${i}: repositories(limit: 1) { total }`).join(' ')} }`;
    const refused = await h.gql(aliases(16));
    expectRefused(refused, 'GRAPHQL_VALIDATION_FAILED', /aliases limit of 15 exceeded/i);

    const five = await h.gql(aliases(5));
    expect(five.errors).toBeUndefined();
    expect(Object.keys(five.data ?? {})).toHaveLength(5);
  });

  it('refuses more than MAX_DIRECTIVES directives (default 50)', async () => {
    const response = await h.gql(`{ repositories { total ${'@include(if: true) '.repeat(51)} } }`);
    expectRefused(response, 'GRAPHQL_VALIDATION_FAILED', /directives limit of 50 exceeded/i);
  });

  it('refuses a document above MAX_COST (default 5000) and allows a full page of 100', async () => {
    const refused = await h.gql(`{ a: ${FULL_PAGE} b: ${FULL_PAGE} c: ${FULL_PAGE} }`);
    expectRefused(refused, 'GRAPHQL_VALIDATION_FAILED', /cost limit of 5000 exceeded/i);

    const page = await h.gql(`{ ${FULL_PAGE} }`);
    expect(page.errors).toBeUndefined();
  });

  it('counts limit and first from variables in the cost, before anything executes', async () => {
    const connection = `query($n: Int) { a: ${FULL_PAGE.replace('first: 100', 'first: $n')} b: ${FULL_PAGE.replace('first: 100', 'first: $n')} c: ${FULL_PAGE.replace('first: 100', 'first: $n')} }`;
    const refused = await h.gql(connection, { n: 100 });
    expect(refused.status).toBe(400);
    expectRefused(refused, 'GRAPHQL_VALIDATION_FAILED', /cost limit of 5000 exceeded/i);
    // The same document with small pages is cheap: the check is not cached per document.
    const small = await h.gql(connection, { n: 1 });
    expect(small.errors).toBeUndefined();
    const again = await h.gql(connection, { n: 100 });
    expect(again.errors?.[0]?.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    h.sandbox.clearRequests();

    const list = `query($n: Int) { ${['a', 'b', 'c', 'd']
      .map(
        (alias) =>
          `${alias}: repositories(limit: $n) { items { id defaultBranch branches { name target isDefault } branch(name: "main") { name target isDefault } tags { name target message } tag(name: "v1") { name target message } } }`,
      )
      .join(' ')} }`;
    expectRefused(
      await h.gql(list, { n: 100 }),
      'GRAPHQL_VALIDATION_FAILED',
      /cost limit of 5000 exceeded/i,
    );
    expect((await h.gql(list, { n: 2 })).errors).toBeUndefined();
  });

  it('uses the configured limits, not only the defaults', async () => {
    const app = h.createApp({ config: { limits: { maxDepth: 2, maxAliases: 0 } } });
    const deep = await postGraphQL(app, '{ repositories { items { id } } }');
    expectRefused(deep, 'GRAPHQL_VALIDATION_FAILED', /depth limit of 2 exceeded, found 3/i);
    const alias = await postGraphQL(app, '{ a: repositories { total } }');
    expectRefused(alias, 'GRAPHQL_VALIDATION_FAILED', /aliases limit of 0 exceeded/i);
  });

  it("answers GraphiQL's introspection query under the default limits", async () => {
    const query = getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
    });
    const response = await h.gql<{ __schema: { types: unknown[] } }>(query);
    expect(response.errors).toBeUndefined();
    expect(response.data?.__schema.types.length).toBeGreaterThan(10);
  });

  it('turns introspection off with INTROSPECTION=false', async () => {
    const app = h.createApp({ config: { limits: { introspection: false } } });
    const response = await postGraphQL(app, '{ __schema { types { name } } }');
    expectRefused(response, 'GRAPHQL_VALIDATION_FAILED', /introspection has been disabled/i);
    const typename = await postGraphQL(app, '{ __typename }');
    expect(typename.data).toEqual({ __typename: 'Query' });
  });

  it('refuses the subgraph SDL when introspection is off, unless SUBGRAPH_SDL keeps it', async () => {
    const sdl = '{ _service { sdl } }';
    const open = await h.gql<{ _service: { sdl: string } }>(sdl);
    expect(open.data?._service.sdl).toContain('type Query');

    const edge = h.createApp({ config: { limits: { introspection: false, subgraphSdl: false } } });
    const refused = await postGraphQL(edge, sdl);
    expectRefused(refused, 'GRAPHQL_VALIDATION_FAILED', /_service.*SUBGRAPH_SDL=true/);
    expect(JSON.stringify(refused)).not.toContain('type Query');

    const subgraph = h.createApp({
      config: { limits: { introspection: false, subgraphSdl: true } },
    });
    const kept = await postGraphQL<{ _service: { sdl: string } }>(subgraph, sdl);
    expect(kept.data?._service.sdl).toContain('type Query');
  });

  it('hides field suggestions in production only', async () => {
    const dev = await h.gql('{ repositories { totl } }');
    expect(dev.errors?.[0]?.message).toMatch(/Did you mean "total"/);

    const app = h.createApp({ config: { production: true } });
    const prod = await postGraphQL(app, '{ repositories { totl } }');
    expect(prod.errors?.[0]?.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(prod.errors?.[0]?.message).not.toMatch(/Did you mean|total"/);
  });

  it('answers 413 to a body above MAX_BODY_BYTES, before parsing it', async () => {
    const app = h.createApp({ config: { limits: { maxBodyBytes: 1024 } } });
    const response = await postGraphQL(app, `{ repositories { total } } # ${'x'.repeat(2000)}`);
    expect(response.status).toBe(413);
    expectRefused(response, 'BAD_USER_INPUT', /too large/i);
  });

  it('answers 413 to a declared Content-Length above MAX_BODY_BYTES over real HTTP', async () => {
    const app = h.createApp({ config: { limits: { maxBodyBytes: 1024 } } });
    const server = await listen(app);
    try {
      const post = (query: string) =>
        fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query }),
        });
      expect((await post(`{ repositories { total } } # ${'x'.repeat(2000)}`)).status).toBe(413);
      expect((await post('{ repositories { total } }')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('refuses variables or extensions nested past 64 levels with BAD_USER_INPUT, before any call', async () => {
    const app = h.createApp({ config: { limits: { maxBodyBytes: 2 * 1024 * 1024 } } });
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const send = async (part: string, depth: number) => {
      const response = await app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: `{"query":"{ repositories(limit: 2) { total } }","${part}":{"a":${nested(depth)}}}`,
      });
      const body = (await response.json()) as {
        errors?: Array<{ message: string; extensions: { code: string } }>;
      };
      return { status: response.status, errors: body.errors };
    };
    // Deep enough to break any recursive JSON.stringify (the response cache's key).
    for (const part of ['variables', 'extensions']) {
      const refused = await send(part, 500_000);
      expect(refused.status).toBe(400);
      expect(refused.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(refused.errors?.[0]?.message).toBe(`${part}.a is nested deeper than 64 levels`);
      expect((await send(part, 65)).status).toBe(400);
    }
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
    const allowed = await send('variables', 64);
    expect(allowed.status).toBe(200);
    expect(allowed.errors).toBeUndefined();
  });

  it('refuses batched requests unless BATCHING_LIMIT allows them', async () => {
    const batch = (app: Harness['app'], n: number) =>
      app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(Array.from({ length: n }, () => ({ query: REPOS }))),
      });
    const off = await batch(h.app, 2);
    expect(off.status).toBe(400);
    const body = (await off.json()) as {
      errors: Array<{ message: string; extensions: { code: string } }>;
    };
    expect(body.errors[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(body.errors[0]?.message).toMatch(/batching is not supported/i);
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);

    const on = h.createApp({ config: { limits: { batchingLimit: 2 } } });
    const two = await batch(on, 2);
    expect(((await two.json()) as unknown[]).length).toBe(2);
    const three = await batch(on, 3);
    expect(three.status).toBe(413);
  });
});

describe('CSRF and CORS', () => {
  const h = useHarness();

  const get = (app: Harness['app'], headers: Record<string, string> = {}) =>
    app.fetch(`http://facade.test/graphql?query=${encodeURIComponent(REPOS)}`, { headers });
  const postFromEvil = (app: Harness['app']) =>
    app.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: JSON.stringify({ query: REPOS }),
    });

  it('runs a plain GET query from a client that is no browser (curl, a script, a server)', async () => {
    const plain = await get(h.app);
    expect(plain.status).toBe(200);
    expect(((await plain.json()) as { errors?: unknown }).errors).toBeUndefined();
    // curl -H 'Content-Type: application/json' 'http://localhost:4000/graphql?query=...'
    const typed = await get(h.app, { 'content-type': 'application/json' });
    expect(typed.status).toBe(200);
    expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')).toHaveLength(2);
  });

  it('refuses a form POST and a GET from another origin without a CSRF header, before anything runs', async () => {
    const foreign = await get(h.app, { origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    const body = (await foreign.json()) as {
      errors: Array<{ message: string; extensions: { code: string } }>;
    };
    expect(body.errors[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(body.errors[0]?.message).toBe('Cross-site request refused');

    // What a page's <img> sends in a browser with Fetch Metadata: no Origin, but a site.
    const image = await get(h.app, {
      'sec-fetch-site': 'cross-site',
      'sec-fetch-mode': 'no-cors',
      'sec-fetch-dest': 'image',
    });
    expect(image.status).toBe(403);

    const form = await h.app.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `query=${encodeURIComponent(REPOS)}`,
    });
    expect(form.status).toBe(403);
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('accepts a GET with x-graphql-csrf and a JSON POST (what GraphiQL sends)', async () => {
    const response = await get(h.app, { 'x-graphql-csrf': '1' });
    expect(response.status).toBe(200);
    const post = await h.gql(REPOS);
    expect(post.errors).toBeUndefined();
  });

  describe('the rule from Origin, Fetch Metadata and CORS_ORIGINS', () => {
    const APP = 'https://app.example.com';
    const EVIL = 'https://evil.example';
    const allowedApp = () => h.createApp({ config: { corsOrigins: [APP] } });
    const url = (query = REPOS) => `http://facade.test/graphql?query=${encodeURIComponent(query)}`;
    // What Chromium sends for each kind of request, as the browser tests see it.
    const metadata = (site: string, mode: string, dest: string) => ({
      'sec-fetch-site': site,
      'sec-fetch-mode': mode,
      'sec-fetch-dest': dest,
    });
    const codeOf = async (response: Response) =>
      ((await response.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]
        ?.extensions.code;

    it("accepts urql's default GET and Apollo Client's POST from an allowed origin, as they are", async () => {
      const app = allowedApp();
      const get = await app.fetch(url(), {
        headers: {
          origin: APP,
          accept: 'application/graphql-response+json, application/json',
          ...metadata('cross-site', 'cors', 'empty'),
        },
      });
      expect(get.status).toBe(200);
      expect(get.headers.get('access-control-allow-origin')).toBe(APP);
      const post = await app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: {
          origin: APP,
          'content-type': 'application/json',
          ...metadata('same-site', 'cors', 'empty'),
        },
        body: JSON.stringify({ query: REPOS }),
      });
      expect(post.status).toBe(200);
      expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')).toHaveLength(2);
    });

    it('accepts a GET from the same origin and an address typed by the user', async () => {
      for (const site of ['same-origin', 'none']) {
        const response = await h.app.fetch(url(), {
          headers: metadata(site, site === 'none' ? 'navigate' : 'cors', 'empty'),
        });
        expect(response.status).toBe(200);
      }
    });

    it.each([
      [
        'a form POST',
        {
          method: 'POST',
          headers: {
            origin: EVIL,
            'content-type': 'application/x-www-form-urlencoded',
            ...metadata('cross-site', 'navigate', 'document'),
          },
          body: `query=${encodeURIComponent(REPOS)}`,
        },
      ],
      ['an <img> GET', { headers: metadata('cross-site', 'no-cors', 'image') }],
      ['a <script> GET', { headers: metadata('cross-site', 'no-cors', 'script') }],
      [
        'a no-cors fetch',
        { headers: { origin: EVIL, ...metadata('cross-site', 'no-cors', 'empty') } },
      ],
      ['a cors fetch', { headers: { origin: EVIL, ...metadata('cross-site', 'cors', 'empty') } }],
      [
        'a text/plain POST',
        {
          method: 'POST',
          headers: {
            origin: EVIL,
            'content-type': 'text/plain',
            ...metadata('cross-site', 'no-cors', 'empty'),
          },
          body: JSON.stringify({ query: REPOS }),
        },
      ],
    ] as Array<[string, RequestInit]>)(
      'refuses %s from a site that is not allowed, before any upstream call',
      async (_, init) => {
        const response = await allowedApp().fetch(
          init.method === 'POST' ? 'http://facade.test/graphql' : url(),
          init,
        );
        expect(response.status).toBe(403);
        expect(response.headers.get('access-control-allow-origin')).toBeNull();
        expect(await codeOf(response)).toBe('BAD_USER_INPUT');
        expect(upstreamRequests(h.sandbox)).toHaveLength(0);
      },
    );

    it('refuses an allowed origin whose request is not a fetch (an <img>, a no-cors fetch)', async () => {
      const app = allowedApp();
      for (const [mode, dest] of [
        ['no-cors', 'image'],
        ['no-cors', 'empty'],
        ['navigate', 'document'],
        ['cors', 'script'],
      ] as const) {
        const response = await app.fetch(url(), {
          headers: { origin: APP, ...metadata('cross-site', mode, dest) },
        });
        expect(response.status).toBe(403);
      }
      expect(upstreamRequests(h.sandbox)).toHaveLength(0);
    });

    it('keeps the header rule for requests without Fetch Metadata', async () => {
      const app = allowedApp();
      // An older browser on an allowed page: the Origin is enough.
      expect((await app.fetch(url(), { headers: { origin: APP } })).status).toBe(200);
      // The same GET from another origin needs a CSRF header; with no origin it is no browser's.
      expect((await app.fetch(url(), { headers: { origin: EVIL } })).status).toBe(403);
      expect(
        (await app.fetch(url(), { headers: { origin: EVIL, 'x-graphql-csrf': '1' } })).status,
      ).toBe(200);
      expect((await app.fetch(url())).status).toBe(200);
      // A text/plain POST is what a form can send: with no origin and no CSRF header, refused.
      const text = await app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ query: REPOS }),
      });
      expect(text.status).toBe(403);
      // curl or a server: a JSON POST needs nothing.
      const post = await app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: REPOS }),
      });
      expect(post.status).toBe(200);
    });

    it('refuses a same-site page whose origin is not allowed: same-site is not same-origin', async () => {
      const sibling = 'https://sibling.example.com';
      for (const [method, extra] of [
        ['GET', {}],
        ['POST', { 'content-type': 'application/json' }],
      ] as const) {
        const response = await allowedApp().fetch(
          method === 'GET' ? url() : 'http://facade.test/graphql',
          {
            method,
            headers: { origin: sibling, ...extra, ...metadata('same-site', 'cors', 'empty') },
            ...(method === 'POST' ? { body: JSON.stringify({ query: REPOS }) } : {}),
          },
        );
        expect(response.status).toBe(403);
        expect(response.headers.get('access-control-allow-origin')).toBeNull();
      }
      expect(upstreamRequests(h.sandbox)).toHaveLength(0);
    });

    it('allows every subdomain of a wildcard origin, and nothing beside it', async () => {
      const app = h.createApp({ config: { corsOrigins: ['https://*.example.com'] } });
      const from = (origin: string) =>
        app.fetch(url(), { headers: { origin, ...metadata('cross-site', 'cors', 'empty') } });
      for (const origin of ['https://app.example.com', 'https://a.b.example.com']) {
        const response = await from(origin);
        expect(response.status).toBe(200);
        expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      }
      for (const origin of [
        'https://example.com',
        'https://evilexample.com',
        'https://app.example.com.evil.org',
        'http://app.example.com',
        'https://app.example.com:8443',
        'https://-x.example.com',
        'https://user@app.example.com',
      ]) {
        const response = await from(origin);
        expect(response.status, origin).toBe(403);
        expect(response.headers.get('access-control-allow-origin')).toBeNull();
      }
      expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')).toHaveLength(2);
    });

    it('never runs a mutation over GET, not even from an allowed origin (405)', async () => {
      const mutation =
        'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }';
      const response = await allowedApp().fetch(url(mutation), {
        headers: { origin: APP, ...metadata('cross-site', 'cors', 'empty') },
      });
      expect(response.status).toBe(405);
      expect(upstreamRequests(h.sandbox)).toHaveLength(0);
    });
  });

  it('sends no CORS headers to another origin by default, preflight included', async () => {
    const cross = await postFromEvil(h.app);
    expect(cross.headers.get('access-control-allow-origin')).toBeNull();
    expect(cross.headers.get('access-control-allow-credentials')).toBeNull();
    const preflight = await h.app.fetch('http://facade.test/graphql', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('allows exactly the CORS_ORIGINS, without credentials', async () => {
    const app = h.createApp({ config: { corsOrigins: ['https://app.example.com'] } });
    const preflight = await app.fetch('http://facade.test/graphql', {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    expect(preflight.headers.get('access-control-allow-credentials')).toBeNull();

    const other = await postFromEvil(app);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('allows trace context and client identity headers, and the CORS_ALLOWED_HEADERS', async () => {
    const preflight = (corsAllowedHeaders: string[]) =>
      h
        .createApp({ config: { corsOrigins: ['https://app.example.com'], corsAllowedHeaders } })
        .fetch('http://facade.test/graphql', {
          method: 'OPTIONS',
          headers: {
            origin: 'https://app.example.com',
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'traceparent, x-tenant',
          },
        });
    const allowed = (response: Response) =>
      (response.headers.get('access-control-allow-headers') ?? '').split(/,\s*/);
    const builtIn = allowed(await preflight([]));
    for (const name of [
      'traceparent',
      'tracestate',
      'baggage',
      'apollographql-client-name',
      'apollographql-client-version',
    ]) {
      expect(builtIn).toContain(name);
    }
    expect(builtIn).not.toContain('x-tenant');
    expect(allowed(await preflight(['x-tenant']))).toContain('x-tenant');
  });
});

describe('caching', () => {
  it('never serves one caller the answer fetched for another, even when it says public', async () => {
    const h = await createHarness();
    try {
      h.sandbox.setFault('GET /git/v1/repo', {
        headers: { 'cache-control': 'public, max-age=60' },
      });
      const query = '{ repositories(limit: 3) { items { id } } }';
      type Ids = { repositories: { items: Array<{ id: string }> } };
      const a = await h.gql<Ids>(query, {}, { authorization: 'Bearer alice' });
      const b = await h.gql<Ids>(query, {}, { authorization: 'Bearer bob' });
      expect(a.data?.repositories.items).toHaveLength(3);
      expect(b.data?.repositories.items).not.toEqual(a.data?.repositories.items);
      expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')).toHaveLength(2);
      // The caller's credential went upstream: the answer is theirs alone, whatever it says.
      expect(a.headers.get('cache-control')).toBe('private, max-age=60');
    } finally {
      await h.close();
    }
  });

  it.each([
    [
      'a trailing slash',
      '/graphql/?query=%7Brepositories(limit%3A1)%7Btotal%7D%7D',
      'application/json',
    ],
    [
      'an event stream',
      '/graphql?query=%7Brepositories(limit%3A1)%7Btotal%7D%7D',
      'text/event-stream',
    ],
    [
      'a multipart answer',
      '/graphql?query=%7Brepositories(limit%3A1)%7Btotal%7D%7D',
      'multipart/mixed',
    ],
    [
      'a graphql-response+json answer',
      '/graphql/?query=%7Brepositories(limit%3A1)%7Btotal%7D%7D',
      'application/graphql-response+json',
    ],
  ])('marks a GraphQL answer on %s private, no-store', async (_, path, accept) => {
    const h = await createHarness();
    try {
      const response = await h.app.fetch(`http://facade.test${path}`, {
        headers: { accept, 'x-graphql-csrf': '1', authorization: 'Bearer alice' },
      });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('"total"');
      expect(response.headers.get('cache-control')).toBe('private, no-store');
    } finally {
      await h.close();
    }
  });

  it('marks the CORS preflight Vary: Origin', async () => {
    const h = await createHarness({ config: { corsOrigins: ['https://app.example.com'] } });
    try {
      const preflight = await h.app.fetch('http://facade.test/graphql', {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
      });
      expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(preflight.headers.get('vary')).toMatch(/\bOrigin\b/);
    } finally {
      await h.close();
    }
  });

  it('has no HTTP cache interceptor anywhere in the facade', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
      );
    const offenders = files('src')
      .filter((file) => file.endsWith('.ts') && !file.includes('sandbox'))
      .filter((file) =>
        /interceptors\s*\.\s*cache|cacheStores|new\s+CacheStore/.test(readFileSync(file, 'utf8')),
      );
    expect(offenders).toEqual([]);
  });
});

describe('refusals', () => {
  const h = useHarness({ config: { production: true } });
  const MARK = 'sk_live_marker';

  const refusals: Array<[string, RequestInit, number]> = [
    [
      'text/plain, even with the CSRF header',
      {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'x-graphql-csrf': '1' },
        body: JSON.stringify({ query: `{ __typename } # ${MARK}` }),
      },
      415,
    ],
    [
      'application/xml',
      { method: 'POST', headers: { 'content-type': 'application/xml' }, body: `<q>${MARK}</q>` },
      415,
    ],
    [
      'a body that is not JSON',
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"query": "${MARK}`,
      },
      400,
    ],
    ['PUT', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: MARK }, 405],
    ['HEAD', { method: 'HEAD', headers: { 'x-graphql-csrf': '1' } }, 405],
  ];
  for (const [what, init, status] of refusals) {
    it(`refuses ${what} with ${status}, a contract code and nothing of the input`, async () => {
      const response = await h.app.fetch('http://facade.test/graphql', init);
      expect(response.status).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/json/);
      const text = await response.text();
      const body = JSON.parse(text) as { errors: Array<{ extensions: Record<string, unknown> }> };
      expect(ERROR_CODES).toContain(body.errors[0]?.extensions.code);
      expect(body.errors[0]?.extensions.originalError).toBeUndefined();
      expect(text).not.toContain(MARK);
      expect(text).not.toMatch(/position \d+/);
      expect(upstreamRequests(h.sandbox)).toHaveLength(0);
    });
  }

  it('refuses an Accept it cannot answer before anything runs', async () => {
    const response = await h.app.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/xml' },
      body: JSON.stringify({
        query: 'mutation { requestDevServer(input: { repoId: "r" }) { isNew } }',
      }),
    });
    expect(response.status).toBe(406);
    const body = (await response.json()) as { errors: Array<{ extensions: { code: string } }> };
    expect(body.errors[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
    for (const accept of ['*/*', 'application/*', 'text/event-stream', 'application/json;q=0.5']) {
      const ok = await h.app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expect(ok.status, accept).toBe(200);
    }
  });

  it('keeps the 400 of a body that is not JSON whatever the client accepts', async () => {
    for (const accept of ['application/json', 'application/graphql-response+json']) {
      const response = await h.app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept },
        body: '{"query": ',
      });
      expect(response.status, accept).toBe(400);
    }
  });

  it('answers HEAD over HTTP with 405 and the methods it allows', async () => {
    const server = await listen((req, res) => void h.app.requestListener(req, res));
    try {
      const response = await fetch(server.url, {
        method: 'HEAD',
        headers: { 'x-graphql-csrf': '1' },
      });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('GET, POST');
    } finally {
      await server.close();
    }
  });
});
