// Properties over every argument of every root field, with valid and hostile values sent both as
// variables and as literals. A property's title, `Type.field(arg, ...): what holds`, claims the
// arguments it covers; the last test fails on a root field or argument that no title claims.
// fast-check prints the seed and the shrunk counterexample on failure; replay the run with
// FC_SEED=<seed>, or one property with `fc.assert(..., { seed, path })`.
import fc from 'fast-check';
import type { RunnerTask } from 'vitest';
import { describe, expect, inject, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.js';
import { schema } from '../../src/schema/index.js';
import {
  anyCursor,
  anyDomain,
  anyInt,
  anyText,
  devServerInput,
  devServerIssues,
  devServerWire,
  domainVerdict,
  INT32_MAX,
  type Issue,
  intIssue,
  literal,
  notAnInt,
} from '../helpers/arbitraries.js';
import { type Harness, upstreamRequests, useDnsHarness } from '../helpers/harness.js';

// Every run generates the same values: the seed is pinned for the run and printed once
// (test/helpers/fast-check-seed.ts).
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: inject('fcSeed') });

/** The contract's codes: the table in src/errors.ts and the ones the contract added since. */
const CONTRACT_CODES = new Set<string>([
  ...ERROR_CODES,
  'UPSTREAM_BUDGET_EXCEEDED',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_ONLY',
]);
/** The codes of a request refused before execution or by the facade's own validation. */
const REFUSALS = new Set(['BAD_USER_INPUT', 'GRAPHQL_VALIDATION_FAILED', 'GRAPHQL_PARSE_FAILED']);

/** What must never be in a body: a stack frame, a source path, a wrapped original error. */
const LEAKS = [
  /\/src\//,
  /node_modules/,
  /\.ts:/,
  /originalError/,
  /"stack"\s*:/,
  /\bat \S+ \(\S+:\d+:\d+\)/,
];

const RUNS = 200;

/** An answer's text, cut short for an assertion message. */
const show = (answer: Answer) =>
  answer.text.length > 600 ? `${answer.text.slice(0, 600)}...` : answer.text;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body:
    | {
        data?: Record<string, unknown> | null;
        errors?: Array<{ message: string; extensions?: { code?: string; upstream?: unknown } }>;
      }
    | undefined;
}

type Form = 'variables' | 'literal';
const anyForm = fc.constantFrom<Form>('variables', 'literal');

async function send(h: Harness, init: RequestInit, url = 'http://facade.test/graphql') {
  const response = await h.app.fetch(url, init);
  const text = await response.text();
  // An event stream carries the answer as the data of its first `next` event.
  const json = response.headers.get('content-type')?.startsWith('text/event-stream')
    ? (/^data: (.*)$/m.exec(text)?.[1] ?? '')
    : text;
  let body: Answer['body'];
  try {
    body = JSON.parse(json) as Answer['body'];
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, text, body };
}

/** Runs one operation with the sandbox's log cleared, so upstreamRequests shows its calls alone. */
function post(h: Harness, query: string, variables?: Record<string, unknown>): Promise<Answer> {
  h.sandbox.clearRequests();
  return send(h, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
    },
    body: JSON.stringify({ query, variables }),
  });
}

/**
 * Runs one subscription as graphql-sse's client does and reads its first event (or the refusal
 * that comes instead), then leaves the stream.
 */
async function subscribeFirst(
  h: Harness,
  query: string,
  variables?: Record<string, unknown>,
): Promise<Answer> {
  h.sandbox.clearRequests();
  const response = await h.app.fetch('http://facade.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query, variables }),
  });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!/^data: .*\n/m.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  const json = response.headers.get('content-type')?.startsWith('text/event-stream')
    ? (/^data: (.*)$/m.exec(text)?.[1] ?? '')
    : text;
  let body: Answer['body'];
  try {
    body = JSON.parse(json) as Answer['body'];
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, text, body };
}

/** The upstream calls since the operation started, as 'METHOD /path'. */
const routes = () => upstreamRequests(h.sandbox).map((r) => `${r.method} ${r.path}`);

/** The properties every answer has, whatever was sent. */
function expectContractAnswer(answer: Answer) {
  expect(answer.status, show(answer)).toBeLessThan(500);
  for (const leak of LEAKS)
    expect(leak.test(answer.text), `${leak} in ${show(answer)}`).toBe(false);
  expect(answer.body, `not a GraphQL answer: ${answer.status} ${show(answer)}`).toBeTypeOf(
    'object',
  );
  const errors = answer.body?.errors ?? [];
  expect(errors.length > 0 || answer.body?.data != null, show(answer)).toBe(true);
  for (const error of errors)
    expect(CONTRACT_CODES, error.message).toContain(error.extensions?.code);
  // Data is the caller's: no shared cache may keep it, whichever path served it.
  if (answer.body?.data != null)
    expect(answer.headers.get('cache-control') ?? '', 'Cache-Control').toMatch(
      /(?=.*\bprivate\b)(?=.*\bno-store\b)/,
    );
  // The facade's own refusal is made before any upstream call.
  if (errors.some((e) => REFUSALS.has(e.extensions?.code ?? '') && !e.extensions?.upstream))
    expect(routes(), show(answer)).toEqual([]);
}

/**
 * The answer to an input the contract refuses: no data for the field, refusal codes only, the
 * offending path named, and nothing sent upstream. Variables are coerced by the facade, so their
 * refusals are all BAD_USER_INPUT; a literal that is not a value of its type fails validation.
 */
function expectRefused(
  answer: Answer,
  field: string,
  issues: Issue[],
  form: Form,
  { named = true } = {},
) {
  const decided = issues.filter((issue) => issue.kind !== 'either');
  expect(answer.body?.data?.[field] == null, `answered: ${show(answer)}`).toBe(true);
  const errors = answer.body?.errors ?? [];
  expect(errors.length, show(answer)).toBeGreaterThan(0);
  for (const error of errors) expect(REFUSALS, show(answer)).toContain(error.extensions?.code);
  // A document over the cost limit is refused before any argument is looked at, as it may be.
  const overCost = errors.every(
    (e) => e.extensions?.code === 'GRAPHQL_VALIDATION_FAILED' && /cost/i.test(e.message),
  );
  const byFacade = form === 'variables' || decided.every((issue) => issue.kind === 'invalid');
  if (!overCost && byFacade) {
    expect(errors.map((e) => e.extensions?.code)).toContain('BAD_USER_INPUT');
    const paths = issues.map((issue) => issue.path);
    const mentioned = errors.some((e) => paths.some((path) => e.message.includes(path)));
    if (named)
      expect(mentioned, `no message names ${paths.join(', ')}: ${show(answer)}`).toBe(true);
  }
  expect(routes(), show(answer)).toEqual([]);
}

/** The answer to a valid input: the field's data and no error. */
function expectAnswered(answer: Answer, field: string) {
  expect(answer.body?.errors, show(answer)).toBeUndefined();
  expect(answer.body?.data?.[field], show(answer)).toBeTypeOf('object');
}

/** Builds the operation either with variables or with the same values inlined as literals. */
function operation(
  form: Form,
  kind: 'query' | 'mutation' | 'subscription',
  field: string,
  args: Record<string, { type: string; value: unknown }>,
  selection: string,
): { query: string; variables?: Record<string, unknown> } {
  const given = Object.entries(args).filter(([, arg]) => arg.value !== undefined);
  // A field of a scalar type takes no selection.
  const selected = selection ? `{ ${selection} }` : '';
  if (form === 'literal') {
    const list = given.map(([name, arg]) => `${name}: ${literal(arg.value)}`).join(', ');
    return { query: `${kind} { ${field}${list ? `(${list})` : ''} ${selected} }` };
  }
  const declared = Object.entries(args).map(([name, arg]) => `$${name}: ${arg.type}`);
  const passed = Object.keys(args).map((name) => `${name}: $${name}`);
  return {
    query: `${kind}(${declared.join(', ')}) { ${field}(${passed.join(', ')}) ${selected} }`,
    variables: Object.fromEntries(given.map(([name, arg]) => [name, arg.value])),
  };
}

/** An optional argument: absent, null, or drawn from `values`. */
const optional = <T>(values: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 8, arbitrary: values },
  );

const { dns, h } = useDnsHarness();

const PAGE = 'total offset hasNextPage items { id defaultBranch branches { name } }';

/** The sandbox's own answer for a page, fetched directly, as the model of `repositories`. */
async function directPage(query: Record<string, number>) {
  const search = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
  const response = await fetch(`${h.sandbox.url}/git/v1/repo?${search}`);
  return (await response.json()) as {
    repositories: Array<{ id: string }>;
    total: number;
    offset: number;
  };
}

describe('root field arguments', () => {
  it('Query.repositories(limit, offset): answers within the contract and refuses bad values upstream-free', async () => {
    const max = h.config.maxPageSize;
    const int = fc.oneof(
      { weight: 6, arbitrary: anyInt(0, max) },
      { weight: 1, arbitrary: notAnInt },
    );
    await fc.assert(
      fc.asyncProperty(anyForm, optional(int), optional(int), async (form, limit, offset) => {
        const args = {
          limit: { type: 'Int', value: limit },
          offset: { type: 'Int', value: offset },
        };
        const answer = await post(
          h,
          ...spread(operation(form, 'query', 'repositories', args, PAGE)),
        );
        expectContractAnswer(answer);
        const issues = [...intIssue(limit, 'limit', 0, max), ...intIssue(offset, 'offset', 0)];
        if (issues.length === 0) expectAnswered(answer, 'repositories');
        else expectRefused(answer, 'repositories', issues, form);
        // A whole number over the bound (a fraction is refused for its type, before any bound).
        const overMax =
          Number.isInteger(limit) && (limit as number) > max && (limit as number) <= INT32_MAX;
        const aboutLimit = answer.body?.errors?.find((e) => /\blimit\b/.test(e.message));
        if (overMax && aboutLimit?.extensions?.code === 'BAD_USER_INPUT')
          expect(aboutLimit.message, 'the bound is not named').toContain(String(max));
      }),
      { numRuns: RUNS },
    );
  });

  it('Query.repositories(limit, offset): a valid page equals what the upstream answers for it', async () => {
    const max = h.config.maxPageSize;
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.integer({ min: 0, max }), { nil: undefined }),
        fc.option(fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constant(2 ** 31 - 1)), {
          nil: undefined,
        }),
        async (limit, offset) => {
          const answer = await post(
            h,
            `query($limit: Int, $offset: Int) { repositories(limit: $limit, offset: $offset) { ${PAGE} } }`,
            { limit, offset },
          );
          expectAnswered(answer, 'repositories');
          const query: Record<string, number> = {};
          if (limit !== undefined) query.limit = limit;
          if (offset !== undefined) query.offset = offset;
          const wire = await directPage(query);
          const got = answer.body?.data?.repositories as {
            total: number;
            offset: number;
            hasNextPage: boolean;
            items: Array<{ id: string }>;
          };
          expect(got.items.map((item) => item.id)).toEqual(wire.repositories.map((r) => r.id));
          expect(got.total).toBe(wire.total);
          expect(got.offset).toBe(wire.offset);
          expect(got.hasNextPage).toBe(wire.offset + wire.repositories.length < wire.total);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('Query.repositoriesConnection(first, after): answers within the contract and refuses bad values upstream-free', async () => {
    const max = h.config.maxPageSize;
    const issued = await issuedCursors();
    const first = fc.oneof(
      { weight: 6, arbitrary: anyInt(0, max) },
      { weight: 1, arbitrary: notAnInt },
    );
    const after = fc.oneof(anyCursor, fc.constantFrom(...issued));
    await fc.assert(
      fc.asyncProperty(anyForm, optional(first), optional(after), async (form, f, a) => {
        const args = { first: { type: 'Int', value: f }, after: { type: 'String', value: a } };
        const selection =
          'totalCount edges { cursor node { id } } pageInfo { hasNextPage endCursor }';
        const answer = await post(
          h,
          ...spread(operation(form, 'query', 'repositoriesConnection', args, selection)),
        );
        expectContractAnswer(answer);
        const issues = intIssue(f, 'first', 0, max);
        // Only a cursor the facade issued is valid; a random one that happens to decode is left open.
        if (typeof a === 'string' && !issued.includes(a))
          issues.push({ path: 'after', kind: /^[A-Za-z0-9_-]*$/.test(a) ? 'either' : 'invalid' });
        if (issues.some((issue) => issue.kind !== 'either'))
          expectRefused(answer, 'repositoriesConnection', issues, form);
        else if (issues.length === 0) expectAnswered(answer, 'repositoriesConnection');
      }),
      { numRuns: RUNS },
    );
  });

  it('Query.repositoriesConnection(first, after): a page after an issued cursor equals what the upstream answers', async () => {
    const issued = await issuedCursors();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: h.config.maxPageSize }),
        fc.integer({ min: 0, max: issued.length - 1 }),
        async (first, index) => {
          const answer = await post(
            h,
            'query($first: Int, $after: String) { repositoriesConnection(first: $first, after: $after) { totalCount edges { node { id } } } }',
            { first, after: issued[index] },
          );
          expectAnswered(answer, 'repositoriesConnection');
          const got = answer.body?.data?.repositoriesConnection as {
            totalCount: number;
            edges: Array<{ node: { id: string } }>;
          };
          const wire = await directPage({ limit: first, offset: index + 1 });
          expect(got.edges.map((edge) => edge.node.id)).toEqual(wire.repositories.map((r) => r.id));
          expect(got.totalCount).toBe(wire.total);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('Query.domainDnsCheck(domain, verificationCode): answers every DNS name from DNS, refuses the rest, never calls the upstream', async () => {
    await fc.assert(
      fc.asyncProperty(anyForm, anyDomain, optional(anyText), async (form, domain, code) => {
        dns.clearQueries();
        const args = {
          domain: { type: 'String!', value: domain },
          verificationCode: { type: 'String', value: code },
        };
        const answer = await post(
          h,
          ...spread(operation(form, 'query', 'domainDnsCheck', args, 'host values matches error')),
        );
        expectContractAnswer(answer);
        expect(routes(), 'domainDnsCheck called the upstream').toEqual([]);
        const { verdict, ascii } = domainVerdict(domain);
        // Whether a blank code is refused or means "no code" is left open.
        const blankCode = typeof code === 'string' && code.trim() === '';
        if (verdict === 'invalid') {
          const issues: Issue[] = [{ path: 'domain', kind: 'invalid' }];
          if (blankCode) issues.push({ path: 'verificationCode', kind: 'either' });
          expectRefused(answer, 'domainDnsCheck', issues, form);
          expect(dns.queries(), 'an invalid domain was looked up').toEqual([]);
        }
        if (verdict === 'valid' && !blankCode) {
          expectAnswered(answer, 'domainDnsCheck');
          const check = answer.body?.data?.domainDnsCheck as { host: string };
          expect(check.host).toBe(`_service_custom_hostname.${ascii}`);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('Subscription.domainDnsCheck(domain, verificationCode): watches every DNS name, refuses the rest before any look-up, never calls the upstream', async () => {
    await fc.assert(
      fc.asyncProperty(anyForm, anyDomain, optional(anyText), async (form, domain, code) => {
        dns.clearQueries();
        const args = {
          domain: { type: 'String!', value: domain },
          verificationCode: { type: 'String', value: code },
        };
        const op = operation(form, 'subscription', 'domainDnsCheck', args, 'host matches error');
        const answer = await subscribeFirst(h, ...spread(op));
        expectContractAnswer(answer);
        expect(routes(), 'domainDnsCheck called the upstream').toEqual([]);
        const { verdict, ascii } = domainVerdict(domain);
        const blankCode = typeof code === 'string' && code.trim() === '';
        if (verdict === 'invalid') {
          const issues: Issue[] = [{ path: 'domain', kind: 'invalid' }];
          if (blankCode) issues.push({ path: 'verificationCode', kind: 'either' });
          expectRefused(answer, 'domainDnsCheck', issues, form);
          expect(dns.queries(), 'an invalid domain was looked up').toEqual([]);
        }
        if (verdict === 'valid' && !blankCode) {
          expectAnswered(answer, 'domainDnsCheck');
          const check = answer.body?.data?.domainDnsCheck as { host: string };
          expect(check.host).toBe(`_service_custom_hostname.${ascii}`);
        }
      }),
      { numRuns: RUNS },
    );
  });

  for (const [field, route, selection] of [
    [
      'createDomainVerification',
      'POST /domains/v1/verifications',
      'domain verificationCode dnsRecord { name }',
    ],
    ['verifyDomain', 'PUT /domains/v1/verifications', 'domain verified message'],
  ] as const) {
    it(`Mutation.${field}(input): sends input.domain as its ASCII form, and nothing else`, async () => {
      const type =
        field === 'verifyDomain' ? 'VerifyDomainInput!' : 'CreateDomainVerificationInput!';
      await fc.assert(
        fc.asyncProperty(anyForm, anyDomain, async (form, domain) => {
          const args = { input: { type, value: { domain } } };
          const answer = await post(
            h,
            ...spread(operation(form, 'mutation', field, args, selection)),
          );
          expectContractAnswer(answer);
          const { verdict, ascii } = domainVerdict(domain);
          if (verdict === 'invalid')
            expectRefused(answer, field, [{ path: 'input.domain', kind: 'invalid' }], form);
          if (verdict === 'valid') {
            expectAnswered(answer, field);
            expect(
              upstreamRequests(h.sandbox).map((r) => [`${r.method} ${r.path}`, r.body]),
            ).toEqual([[route, { domain: ascii }]]);
            expect(answer.body?.data?.[field]).toMatchObject({ domain: ascii });
          }
        }),
        { numRuns: RUNS },
      );
    });
  }

  const devServerCase = fc.tuple(
    anyForm,
    fc.oneof(
      { weight: 20, arbitrary: devServerInput },
      { weight: 1, arbitrary: fc.constantFrom<unknown>(null, { unknownField: 1 }) },
    ),
  );
  async function requestDevServer(form: Form, value: unknown) {
    const args = { input: { type: 'RequestDevServerInput!', value } };
    const selection = 'url ephemeralUrl isNew devCommandRunning installCommandRunning';
    const answer = await post(
      h,
      ...spread(operation(form, 'mutation', 'requestDevServer', args, selection)),
    );
    const record = value as Record<string, unknown> | null;
    const issues: Issue[] =
      record === null || 'unknownField' in record
        ? [{ path: 'input', kind: 'coercion' }]
        : devServerIssues(record);
    return { answer, record, issues, refused: issues.some((issue) => issue.kind !== 'either') };
  }

  it('Mutation.requestDevServer(input): sends a valid input as given (absent, null and empty apart), refuses the rest upstream-free', async () => {
    await fc.assert(
      fc.asyncProperty(devServerCase, async ([form, value]) => {
        const { answer, record, issues, refused } = await requestDevServer(form, value);
        expectContractAnswer(answer);
        if (refused) expectRefused(answer, 'requestDevServer', issues, form, { named: false });
        else if (issues.length === 0 && record !== null) {
          expectAnswered(answer, 'requestDevServer');
          const sent = upstreamRequests(h.sandbox, 'POST /ephemeral/v1/dev-servers');
          expect(sent.map((r) => r.body)).toEqual([devServerWire(record)]);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('Mutation.requestDevServer(input): refuses a very long list with a bounded answer, upstream-free', async () => {
    // A length and a kind of list, built deterministically, so a failure shrinks in a few steps.
    const lists = fc.tuple(
      fc.constantFrom('ports', 'envVars'),
      fc.integer({ min: 2_000, max: 10_000 }),
    );
    const build = ([kind, length]: [string, number]) =>
      kind === 'ports'
        ? { ports: Array.from({ length }, (_, i) => ({ port: i % 2 ? 80 : 443, targetPort: 0 })) }
        : { envVars: Array.from({ length }, () => ({ name: '1BAD', value: 'x' })) };
    await fc.assert(
      fc.asyncProperty(lists, async (list) => {
        const { answer } = await requestDevServer('variables', build(list));
        expectContractAnswer(answer);
        expectRefused(answer, 'requestDevServer', [], 'variables', { named: false });
        expect(answer.text.length, 'the answer grows with the list').toBeLessThan(64 * 1024);
      }),
      { numRuns: 4 },
    );
  });

  it('Mutation.requestDevServer(input): names the path of the offending value, as a client writes it', async () => {
    await fc.assert(
      fc.asyncProperty(devServerCase, async ([form, value]) => {
        const { answer, issues, refused } = await requestDevServer(form, value);
        if (refused) expectRefused(answer, 'requestDevServer', issues, form);
      }),
      { numRuns: 100 },
    );
  });
});

/** Federation's root fields, which a router calls, not clients. */
const FEDERATION_FIELDS = new Set(['_service', '_entities']);

/** The titles of a file's or a suite's tests. */
const titles = (task: RunnerTask): string[] =>
  task.type === 'suite' ? task.tasks.flatMap(titles) : [task.name];

describe('root fields', () => {
  it('have a property over each of their arguments', ({ task }) => {
    const claimed = new Map<string, Set<string>>();
    for (const title of titles(task.file)) {
      const [, field, args = ''] = /^(\w+\.\w+)\(([\w, ]*)\): /.exec(title) ?? [];
      if (field) claimed.set(field, new Set([...(claimed.get(field) ?? []), ...args.split(', ')]));
    }
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()];
    const served = roots.flatMap((type) =>
      Object.values(type?.getFields() ?? {})
        .filter((field) => !FEDERATION_FIELDS.has(field.name))
        .map((field) => ({ name: `${type?.name}.${field.name}`, args: field.args })),
    );
    const uncovered = served.flatMap(({ name, args }) => {
      const covered = claimed.get(name);
      if (!covered) return [`${name}: no property`];
      return args.filter((arg) => !covered.has(arg.name)).map((arg) => `${name}(${arg.name})`);
    });
    expect(uncovered, 'root fields and arguments no property covers').toEqual([]);
    const names = new Set(served.map((field) => field.name));
    expect(
      [...claimed.keys()].filter((name) => !names.has(name)),
      'not served',
    ).toEqual([]);
  });
});

describe('HTTP refusals', () => {
  it('answers every method, path, media type and body with a coded GraphQL answer, never a 5xx', async () => {
    const bodies = fc.oneof(
      fc.constantFrom(
        '{"query":"{ repositories(limit: 1) { total } }"}',
        '{"query":',
        '{"query": 5}',
        '{"query": "{"}',
        '{"query": "{ repositories { total } }", "variables": "x"}',
        '{"query": "{ nope }"}',
        '[]',
        '7',
        'null',
        '',
        '<query/>',
        'query=%7B__typename%7D',
      ),
      anyText,
    );
    const request = fc.record({
      method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD'),
      contentType: fc.constantFrom(
        undefined,
        'application/json',
        'application/graphql-response+json',
        'application/json; charset=utf-16',
        'text/plain',
        'application/xml',
        'multipart/form-data; boundary=x',
        'application/x-www-form-urlencoded',
        'application/graphql',
        'nonsense',
      ),
      accept: fc.constantFrom(
        'application/graphql-response+json',
        'application/json',
        'text/event-stream',
        '*/*',
      ),
      csrf: fc.boolean(),
      path: fc.constantFrom(
        '/graphql',
        '/graphql/',
        '/graphql?query=%7B__typename%7D',
        '/graphql/?query=%7Brepositories(limit%3A1)%7Btotal%7D%7D',
        '/graphql?query=%7B',
      ),
      body: bodies,
    });
    await fc.assert(
      fc.asyncProperty(request, async ({ method, contentType, accept, csrf, path, body }) => {
        const headers: Record<string, string> = { accept };
        if (contentType) headers['content-type'] = contentType;
        if (csrf) headers['x-graphql-csrf'] = '1';
        h.sandbox.clearRequests();
        const answer = await send(
          h,
          { method, headers, ...(method === 'GET' || method === 'HEAD' ? {} : { body }) },
          `http://facade.test${path}`,
        );
        // An answer to HEAD has no body on the wire, whatever the server writes.
        if (method === 'HEAD') expect(answer.status, show(answer)).toBeLessThan(500);
        else expectContractAnswer(answer);
      }),
      { numRuns: RUNS },
    );
  });
});

/** Every cursor the facade issues for the sandbox's list, from a walk over the connection. */
async function issuedCursors(): Promise<string[]> {
  const answer = await post(h, '{ repositoriesConnection(first: 100) { edges { cursor } } }');
  const connection = answer.body?.data?.repositoriesConnection as
    | { edges: Array<{ cursor: string }> }
    | undefined;
  const edges = connection?.edges ?? [];
  expect(edges.length, show(answer)).toBeGreaterThan(1);
  return edges.map((edge) => edge.cursor);
}

const spread = (op: { query: string; variables?: Record<string, unknown> }) =>
  [op.query, op.variables] as const;
