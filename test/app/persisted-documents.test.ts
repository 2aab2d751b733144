import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { APQ_MAX_DOCUMENT_BYTES } from '../../src/security/use-apq.js';
import { documentIdOf } from '../../src/security/use-trusted-documents.js';
import { upstreamRequests, useHarness } from '../helpers/harness.js';

// The id @graphql-codegen/client-preset writes: `sha256:` and the hex digest of the document.
const sha256 = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;
const bareSha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const LIST = 'query List($limit: Int) { repositories(limit: $limit) { total items { id } } }';
const CREATE =
  'mutation Create($domain: String!) { createDomainVerification(input: { domain: $domain }) { id } }';
const ARBITRARY = '{ repositories(limit: 2) { total } }';
const UNKNOWN = bareSha256('{ __typename }');

const dir = mkdtempSync(join(tmpdir(), 'trusted-documents-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function manifestFile(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}
const MANIFEST = manifestFile(
  'persisted-documents.json',
  JSON.stringify({ [sha256(LIST)]: LIST, [sha256(CREATE)]: CREATE }, null, 2),
);
// The same documents under bare hex ids, as other generators and hand-written manifests have them.
const BARE_MANIFEST = manifestFile(
  'bare-persisted-documents.json',
  JSON.stringify({ [bareSha256(LIST)]: LIST, [bareSha256(CREATE)]: CREATE }, null, 2),
);

type Body = {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
};

/** A POST as GraphQL clients send it; `body` is the JSON request. */
async function post(
  app: { fetch: (url: string, init: RequestInit) => Promise<Response> | Response },
  body: Record<string, unknown>,
) {
  const response = await app.fetch('http://facade.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Body };
}

/** A GET with the parameters in the query string (objects as JSON), as urql sends queries. */
async function get(
  app: { fetch: (url: string, init: RequestInit) => Promise<Response> | Response },
  params: Record<string, unknown>,
) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    search.set(key, typeof value === 'string' ? value : JSON.stringify(value));
  const response = await app.fetch(`http://facade.test/graphql?${search}`, {
    method: 'GET',
    // Outside a browser (no Fetch Metadata) a GET names itself with a CSRF header (the CSRF rule).
    headers: { accept: 'application/json', 'x-graphql-csrf': '1' },
  });
  return { status: response.status, body: (await response.json()) as Body };
}

const apq = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });
const codeOf = (body: Body) => body.errors?.[0]?.extensions?.code;
const itemsOf = (body: Body) =>
  (body.data?.repositories as { items?: unknown[] } | undefined)?.items;

describe('trusted documents (PERSISTED_DOCUMENTS_ONLY=true)', () => {
  const h = useHarness(() => ({
    config: {
      ...pick(loadConfig({ PERSISTED_DOCUMENTS: MANIFEST, PERSISTED_DOCUMENTS_ONLY: 'true' })),
    },
  }));

  it('runs a known document named by documentId', async () => {
    const { status, body } = await post(h.app, {
      documentId: sha256(LIST),
      variables: { limit: 2 },
    });
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    expect(itemsOf(body)).toHaveLength(2);
  });

  it('runs a known document named by Apollo’s extensions.persistedQuery', async () => {
    const { body } = await post(h.app, { extensions: apq(sha256(LIST)), variables: { limit: 1 } });
    expect(body.errors).toBeUndefined();
    expect(itemsOf(body)).toHaveLength(1);
  });

  it('runs a hash-only GET, in either form', async () => {
    const byId = await get(h.app, { documentId: sha256(LIST), variables: { limit: 3 } });
    expect(byId.body.errors).toBeUndefined();
    expect(itemsOf(byId.body)).toHaveLength(3);
    const byExtension = await get(h.app, { extensions: apq(sha256(LIST)), variables: {} });
    expect(byExtension.body.errors).toBeUndefined();
    expect(byExtension.body.data?.repositories).toBeDefined();
  });

  it('answers an unknown id with PERSISTED_QUERY_NOT_FOUND and no upstream call', async () => {
    for (const answer of [
      await post(h.app, { documentId: UNKNOWN }),
      await post(h.app, { extensions: apq(UNKNOWN) }),
      await get(h.app, { documentId: UNKNOWN }),
    ]) {
      expect(codeOf(answer.body)).toBe('PERSISTED_QUERY_NOT_FOUND');
      // Apollo's protocol: a 200 whose body tells the client to send the document.
      expect(answer.status).toBe(200);
      expect(answer.body.errors?.[0]?.message).toBe('PersistedQueryNotFound');
      expect(answer.body.data).toBeUndefined();
    }
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('answers PERSISTED_QUERY_NOT_FOUND with 200 under graphql-response+json too', async () => {
    for (const body of [{ documentId: UNKNOWN }, { extensions: apq(UNKNOWN) }]) {
      const response = await h.app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
        },
        body: JSON.stringify(body),
      });
      // Apollo's clients resend the document on this code only when the answer is a 200.
      expect(response.status).toBe(200);
      expect(codeOf((await response.json()) as Body)).toBe('PERSISTED_QUERY_NOT_FOUND');
    }
  });

  it('refuses a document sent as text with PERSISTED_QUERY_ONLY and no upstream call', async () => {
    const cases = [
      await post(h.app, { query: ARBITRARY }),
      // Even a trusted document's own text: only its id is accepted.
      await post(h.app, { query: LIST, variables: { limit: 1 } }),
      // APQ's registration form: a hash with its document.
      await post(h.app, { query: ARBITRARY, extensions: apq(bareSha256(ARBITRARY)) }),
      await get(h.app, { query: ARBITRARY }),
      // Neither a document nor an id.
      await post(h.app, {}),
    ];
    for (const answer of cases) {
      expect(answer.status).toBe(400);
      expect(codeOf(answer.body)).toBe('PERSISTED_QUERY_ONLY');
      expect(answer.body.errors?.[0]?.message).toBe(
        "Only trusted documents run here: send a known document's id as documentId or extensions.persistedQuery.sha256Hash, without the document's text",
      );
    }
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('runs a trusted mutation by its id over POST, never over GET', async () => {
    const posted = await post(h.app, {
      documentId: sha256(CREATE),
      variables: { domain: 'trusted.example.com' },
    });
    expect(posted.body.errors).toBeUndefined();
    expect(posted.body.data?.createDomainVerification).toMatchObject({ id: expect.any(String) });
    h.sandbox.clearRequests();
    const viaGet = await get(h.app, {
      documentId: sha256(CREATE),
      variables: { domain: 'get.example.com' },
    });
    expect(viaGet.status).toBe(405);
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('does not store documents for APQ', async () => {
    await post(h.app, { query: ARBITRARY, extensions: apq(bareSha256(ARBITRARY)) });
    const again = await post(h.app, { extensions: apq(bareSha256(ARBITRARY)) });
    expect(codeOf(again.body)).toBe('PERSISTED_QUERY_NOT_FOUND');
  });
});

describe('trusted documents beside other documents (PERSISTED_DOCUMENTS_ONLY unset)', () => {
  const h = useHarness(() => ({ config: pick(loadConfig({ PERSISTED_DOCUMENTS: MANIFEST })) }));

  it('runs trusted documents by id and documents sent as text', async () => {
    const byId = await post(h.app, { documentId: sha256(LIST), variables: { limit: 1 } });
    expect(byId.body.errors).toBeUndefined();
    const asText = await post(h.app, { query: ARBITRARY });
    expect(asText.body.errors).toBeUndefined();
    expect(asText.body.data?.repositories).toMatchObject({ total: expect.any(Number) });
  });

  it('runs a trusted document named in the URL of a GET, but not of a POST', async () => {
    const byUrl = await get(h.app, { documentId: sha256(LIST), variables: { limit: 2 } });
    expect(byUrl.body.errors).toBeUndefined();
    expect(itemsOf(byUrl.body)).toHaveLength(2);
    const search = new URLSearchParams({ documentId: sha256(LIST) });
    const response = await h.app.fetch(`http://facade.test/graphql?${search}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: ARBITRARY }),
    });
    const body = (await response.json()) as Body;
    expect(body.errors).toBeUndefined();
    expect(body.data?.repositories).toEqual({ total: expect.any(Number) });
  });

  it('answers an unknown documentId with PERSISTED_QUERY_NOT_FOUND', async () => {
    const { body } = await post(h.app, { documentId: UNKNOWN });
    expect(codeOf(body)).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('serves APQ for hashes the manifest does not have', async () => {
    const hash = bareSha256(ARBITRARY);
    expect(codeOf((await post(h.app, { extensions: apq(hash) })).body)).toBe(
      'PERSISTED_QUERY_NOT_FOUND',
    );
    await post(h.app, { query: ARBITRARY, extensions: apq(hash) });
    const { body } = await get(h.app, { extensions: apq(hash) });
    expect(body.errors).toBeUndefined();
    expect(body.data?.repositories).toMatchObject({ total: expect.any(Number) });
  });
});

describe.each([
  ['sha256:<hex> ids', MANIFEST, 'true'],
  ['sha256:<hex> ids', MANIFEST, 'false'],
  ['bare hex ids', BARE_MANIFEST, 'true'],
  ['bare hex ids', BARE_MANIFEST, 'false'],
])('a manifest of %s, PERSISTED_DOCUMENTS_ONLY=%s', (_, manifest, only) => {
  const h = useHarness(() => ({
    config: pick(loadConfig({ PERSISTED_DOCUMENTS: manifest, PERSISTED_DOCUMENTS_ONLY: only })),
  }));
  const hex = bareSha256(LIST);

  // Apollo Client's persisted-query link sends the bare digest whatever the manifest's ids are.
  it.each([
    ['its bare digest', hex],
    ['its sha256: id', `sha256:${hex}`],
    ['its digest in upper case', hex.toUpperCase()],
    ['its sha256: id in upper case', `sha256:${hex.toUpperCase()}`],
  ])('runs the document named by %s, as documentId or sha256Hash', async (_, id) => {
    for (const named of [{ documentId: id }, { extensions: apq(id) }]) {
      const { body } = await post(h.app, { ...named, variables: { limit: 1 } });
      expect(body.errors, JSON.stringify(named)).toBeUndefined();
      expect(itemsOf(body)).toHaveLength(1);
    }
    const { body } = await get(h.app, { extensions: apq(id), variables: { limit: 2 } });
    expect(body.errors).toBeUndefined();
    expect(itemsOf(body)).toHaveLength(2);
  });

  it('answers another digest with PERSISTED_QUERY_NOT_FOUND', async () => {
    for (const id of [UNKNOWN, `sha256:${UNKNOWN}`]) {
      for (const named of [{ documentId: id }, { extensions: apq(id) }]) {
        expect(codeOf((await post(h.app, named)).body)).toBe('PERSISTED_QUERY_NOT_FOUND');
      }
    }
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });
});

describe('automatic persisted queries, in memory', () => {
  const h = useHarness();
  const QUERY = '{ repositories(limit: 1) { total items { id } } }';
  const hash = bareSha256(QUERY);

  it('answers an unknown hash with PERSISTED_QUERY_NOT_FOUND and no upstream call', async () => {
    const { status, body } = await post(h.app, { extensions: apq(hash) });
    // Apollo's protocol: the client reads the code and sends the document with its hash.
    expect(status).toBe(200);
    expect(codeOf(body)).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(body.errors?.[0]?.message).toBe('PersistedQueryNotFound');
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('refuses a hash that is not the document’s with BAD_USER_INPUT and no upstream call', async () => {
    const { status, body } = await post(h.app, { query: QUERY, extensions: apq(UNKNOWN) });
    expect(status).toBe(400);
    expect(codeOf(body)).toBe('BAD_USER_INPUT');
    expect(body.errors?.[0]?.message).toMatch(/sha256Hash is not the SHA-256/);
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
    // And stores nothing under the wrong hash.
    expect(codeOf((await post(h.app, { extensions: apq(UNKNOWN) })).body)).toBe(
      'PERSISTED_QUERY_NOT_FOUND',
    );
  });

  it('runs a hash-only GET once the document was sent with its hash', async () => {
    const registered = await post(h.app, { query: QUERY, extensions: apq(hash) });
    expect(registered.body.errors).toBeUndefined();
    const { status, body } = await get(h.app, { extensions: apq(hash) });
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    expect(itemsOf(body)).toHaveLength(1);
  });

  it('stores a document sent with its hash only once it has parsed and validated', async () => {
    const aliases = Array.from({ length: 20 }, (_, i) => `a${i}: repositories { total }`).join(' ');
    const refused = [
      // Text that is not GraphQL: a flood of it must not fill the store.
      'not a GraphQL document '.repeat(2_000),
      // GraphQL that does not validate against the schema.
      '{ repositories(limit: 1) { nope } }',
      // Valid but past a limit (MAX_ALIASES).
      `{ ${aliases} }`,
    ];
    for (const text of refused) {
      const hash = bareSha256(text);
      const sent = await post(h.app, { query: text, extensions: apq(hash) });
      expect(codeOf(sent.body)).toMatch(/^GRAPHQL_(PARSE|VALIDATION)_FAILED$/);
      const again = await post(h.app, { extensions: apq(hash) });
      expect(codeOf(again.body)).toBe('PERSISTED_QUERY_NOT_FOUND');
    }
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('keeps concurrent registrations apart: only the valid one is stored', async () => {
    const valid = '{ repositories(limit: 2) { total } }';
    const junk = 'also not GraphQL';
    await Promise.all(
      [junk, valid, junk.repeat(2)].map((text) =>
        post(h.app, { query: text, extensions: apq(bareSha256(text)) }),
      ),
    );
    expect((await post(h.app, { extensions: apq(bareSha256(valid)) })).body.errors).toBeUndefined();
    for (const text of [junk, junk.repeat(2)]) {
      const { body } = await post(h.app, { extensions: apq(bareSha256(text)) });
      expect(codeOf(body)).toBe('PERSISTED_QUERY_NOT_FOUND');
    }
  });

  it('runs a valid document longer than the stored bound, without storing it', async () => {
    const long = `{ repositories(limit: 1) { total } }${' '.repeat(APQ_MAX_DOCUMENT_BYTES)}`;
    const hash = bareSha256(long);
    const sent = await post(h.app, { query: long, extensions: apq(hash) });
    expect(sent.body.errors).toBeUndefined();
    expect(sent.body.data?.repositories).toMatchObject({ total: expect.any(Number) });
    expect(codeOf((await post(h.app, { extensions: apq(hash) })).body)).toBe(
      'PERSISTED_QUERY_NOT_FOUND',
    );
  });

  it('does not accept documentId without a trusted-documents manifest', async () => {
    const { status, body } = await post(h.app, { documentId: hash });
    expect(status).toBe(400);
    expect(codeOf(body)).toBe('BAD_USER_INPUT');
  });
});

describe('PERSISTED_DOCUMENTS configuration', () => {
  it('reads the manifest @graphql-codegen/client-preset writes', () => {
    const config = loadConfig({ PERSISTED_DOCUMENTS: MANIFEST });
    expect([...(config.persistedDocuments.documents?.keys() ?? [])]).toEqual([
      sha256(LIST),
      sha256(CREATE),
    ]);
    expect(config.persistedDocuments.only).toBe(false);
    expect(config.apq.enabled).toBe(true);
    expect(
      loadConfig({ PERSISTED_DOCUMENTS: MANIFEST, PERSISTED_DOCUMENTS_ONLY: 'true' }).apq.enabled,
    ).toBe(false);
  });

  it.each([
    ['a missing file', join(dir, 'missing.json'), /cannot read the manifest \(ENOENT\)/],
    ['a folder', dir, /cannot read the manifest \(EISDIR\)/],
    ['bad JSON', manifestFile('bad.json', '{"a": '), /not JSON/],
    ['a list', manifestFile('list.json', '["{ a }"]'), /JSON object/],
    ['an empty manifest', manifestFile('empty.json', '{}'), /no documents/],
    ['a non-string entry', manifestFile('num.json', '{"abc": 1}'), /"abc" is not a string/],
    [
      'an entry that does not parse',
      manifestFile('parse.json', '{"abc": "{ a"}'),
      /"abc" is not a GraphQL document/,
    ],
    ['an id that is not a hash', manifestFile('id.json', '{"a b": "{ a }"}'), /is not a hash/],
    [
      'a bare SHA-256 id of another document',
      manifestFile('stale-bare.json', JSON.stringify({ [bareSha256('{ b }')]: '{ a }' })),
      /is not the SHA-256 of its document/,
    ],
    [
      'a SHA-256 id of another document',
      manifestFile('stale.json', JSON.stringify({ [sha256('{ b }')]: '{ a }' })),
      /is not the SHA-256 of its document/,
    ],
  ])('refuses %s, naming PERSISTED_DOCUMENTS', (_, path, message) => {
    expect(() => loadConfig({ PERSISTED_DOCUMENTS: path })).toThrow(ConfigError);
    expect(() => loadConfig({ PERSISTED_DOCUMENTS: path })).toThrow(/^PERSISTED_DOCUMENTS: /);
    expect(() => loadConfig({ PERSISTED_DOCUMENTS: path })).toThrow(message);
  });

  it('refuses PERSISTED_DOCUMENTS_ONLY without a manifest', () => {
    expect(() => loadConfig({ PERSISTED_DOCUMENTS_ONLY: 'true' })).toThrow(ConfigError);
    expect(() => loadConfig({ PERSISTED_DOCUMENTS_ONLY: 'true' })).toThrow(
      /^PERSISTED_DOCUMENTS_ONLY: .*set PERSISTED_DOCUMENTS/,
    );
  });
});

/** The sections of a loaded config that these tests set on the harness's. */
function pick(config: ReturnType<typeof loadConfig>) {
  return { persistedDocuments: config.persistedDocuments, apq: config.apq };
}

describe('documentIdOf', () => {
  const at = (method: string, search = '') =>
    new Request(`http://facade.test/graphql${search}`, { method });

  it('reads documentId from the body, then from the URL of a GET, then from Apollo’s extension', () => {
    expect(documentIdOf({ documentId: 'a' } as never, at('GET', '?documentId=b'))).toBe('a');
    expect(documentIdOf({}, at('GET', '?documentId=b'))).toBe('b');
    expect(documentIdOf({ extensions: apq('c') }, at('GET', '?documentId='))).toBe('c');
    expect(documentIdOf({}, at('GET'))).toBeUndefined();
  });

  it('ignores documentId in the URL of a POST', () => {
    expect(documentIdOf({}, at('POST', '?documentId=b'))).toBeUndefined();
    expect(documentIdOf({ extensions: apq('c') }, at('POST', '?documentId=b'))).toBe('c');
  });
});
