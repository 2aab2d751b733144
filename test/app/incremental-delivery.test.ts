import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/telemetry/logger.js';
import { postGraphQL, upstreamRequests, useDnsHarness } from '../helpers/harness.js';

type Payload = {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
  incremental?: Array<{
    data?: Record<string, unknown>;
    items?: unknown[];
    path: Array<string | number>;
    label?: string;
    errors?: Array<{ message: string; extensions?: { code?: string } }>;
  }>;
  hasNext?: boolean;
  extensions?: Record<string, unknown>;
};

/** The JSON parts of a multipart/mixed answer, in order. */
function multipartParts(body: string): Payload[] {
  return body
    .split(/\r?\n---/)
    .map((chunk) =>
      chunk
        .split(/\r?\n\r?\n/)
        .slice(1)
        .join('\n\n')
        .trim(),
    )
    .filter((json) => json.startsWith('{'))
    .map((json) => JSON.parse(json) as Payload);
}

/** The `next` events of a text/event-stream answer, in order. */
function eventParts(body: string): Payload[] {
  return body
    .split(/\n\n/)
    .filter((event) => event.startsWith('event: next'))
    .map((event) => JSON.parse(event.replace(/^event: next\ndata: /, '')) as Payload);
}

describe('@defer and @stream', () => {
  const { dns, h } = useDnsHarness();

  const send = (query: string, accept: string, variables?: Record<string, unknown>) =>
    h.app.fetch('http://facade.test/graphql', {
      method: 'POST',
      // What urql and Apollo Client send for an operation with @defer.
      headers: { 'content-type': 'application/json', accept },
      body: JSON.stringify({ query, variables }),
    });
  const MULTIPART = 'multipart/mixed, application/graphql-response+json, application/json';

  it('sends the page first and a deferred DNS check after it, as multipart/mixed', async () => {
    dns.setTxt('_service_custom_hostname.example.com', ['code-1']);
    const response = await send(
      `query Page {
        repositories(limit: 2) { total items { id } }
        ... @defer(label: "dns") {
          domainDnsCheck(domain: "example.com", verificationCode: "code-1") { host values matches }
        }
      }`,
      MULTIPART,
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^multipart\/mixed/);
    const parts = multipartParts(await response.text());
    expect(parts.length).toBeGreaterThanOrEqual(2);
    const [first] = parts;
    expect(first?.hasNext).toBe(true);
    expect(first?.data?.repositories).toMatchObject({ total: 50 });
    expect(first?.data).not.toHaveProperty('domainDnsCheck');
    const deferred = parts.flatMap((part) => part.incremental ?? []);
    expect(deferred).toEqual([
      {
        label: 'dns',
        path: [],
        data: {
          domainDnsCheck: {
            host: '_service_custom_hostname.example.com',
            values: ['code-1'],
            matches: true,
          },
        },
      },
    ]);
    expect(parts.at(-1)?.hasNext).toBe(false);
  });

  it("defers part of verifyDomain's answer, and runs the mutation once", async () => {
    const response = await send(
      `mutation {
        verifyDomain(input: { domain: "example.com" }) { domain ... @defer { verified message } }
      }`,
      MULTIPART,
    );
    const parts = multipartParts(await response.text());
    expect(parts[0]?.data).toEqual({ verifyDomain: { domain: 'example.com' } });
    const deferred = parts.flatMap((part) => part.incremental ?? []);
    expect(deferred).toHaveLength(1);
    expect(deferred[0]?.path).toEqual(['verifyDomain']);
    expect(deferred[0]?.data).toHaveProperty('verified', false);
    expect(upstreamRequests(h.sandbox, 'PUT /domains/v1/verifications')).toHaveLength(1);
  });

  it('streams a page of repositories item by item, the same items as one answer, one upstream call', async () => {
    const plain = await h.gql<{ repositories: { items: Array<{ id: string }> } }>(
      '{ repositories(limit: 5) { items { id defaultBranch } } }',
    );
    h.sandbox.clearRequests();
    const response = await send(
      '{ repositories(limit: 5) { items @stream(initialCount: 1) { id defaultBranch } } }',
      MULTIPART,
    );
    const parts = multipartParts(await response.text());
    const initial = (parts[0]?.data?.repositories as { items: unknown[] } | undefined)?.items ?? [];
    expect(initial).toHaveLength(1);
    const streamed = parts.flatMap((part) => part.incremental ?? []).flatMap((i) => i.items ?? []);
    expect([...initial, ...streamed]).toEqual(plain.data?.repositories.items);
    expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')).toHaveLength(1);
  });

  it('answers as text/event-stream to a client that asks for it', async () => {
    const response = await send(
      '{ repositories(limit: 3) { items @stream(initialCount: 0) { id } } }',
      'text/event-stream',
    );
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const parts = eventParts(await response.text());
    expect(parts[0]?.data).toEqual({ repositories: { items: [] } });
    expect(parts.flatMap((part) => part.incremental ?? []).flatMap((i) => i.items)).toHaveLength(3);
  });

  it('refuses @defer to a client that accepts only JSON, before anything runs (406)', async () => {
    const response = await send(
      'mutation { verifyDomain(input: { domain: "example.com" }) { domain ... @defer { verified } } }',
      'application/graphql-response+json, application/json',
    );
    expect(response.status).toBe(406);
    const body = (await response.json()) as Payload;
    expect(body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
    const refused = await send(
      '{ ... @defer { repositories(limit: 1) { total } } }',
      'multipart/mixed;q=0, application/json',
    );
    expect(refused.status).toBe(406);
  });

  it('answers operations without @defer or @stream as before, whatever the client accepts', async () => {
    const response = await send('{ repositories(limit: 1) { total } }', MULTIPART);
    expect(response.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/);
    expect(await response.json()).toEqual({
      data: { repositories: { total: 50 } },
      extensions: expect.any(Object),
    });
  });

  it('keeps the cost limit, the call budget and the upstream calls over the deferred parts', async () => {
    const costly = h.createApp({ config: { limits: { maxCost: 50 } } });
    const refused = await postGraphQL(
      costly,
      '{ ... @defer { repositories(limit: 100) { items { id branches { name } } } } }',
      undefined,
      { accept: MULTIPART },
    );
    expect(refused.status).toBe(400);
    expect(refused.errors?.[0]?.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');

    const budgeted = h.createApp({ config: { maxUpstreamCalls: 1, maxCoalescedRange: 0 } });
    const response = await budgeted.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: MULTIPART },
      body: JSON.stringify({
        query: `{
          a: repositories(limit: 1, offset: 0) { items { id } }
          ... @defer { b: repositories(limit: 1, offset: 10) { items { id } } }
        }`,
      }),
    });
    const parts = multipartParts(await response.text());
    expect(parts[0]?.data?.a).toEqual({ items: [{ id: expect.any(String) }] });
    const deferred = parts.flatMap((part) => part.incremental ?? []);
    expect(deferred[0]?.errors?.[0]?.extensions?.code).toBe('UPSTREAM_BUDGET_EXCEEDED');
    // The last part shows every call behind the whole answer (outside production).
    expect(parts.at(-1)?.extensions?.upstreamCalls).toMatchObject({
      budget: { used: 1, limit: 1 },
    });
  });

  it("logs one line for the whole answer, after its last part, with every part's calls and codes", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger('info', { write: (line: string) => lines.push(JSON.parse(line)) });
    const app = h.createApp({ logger, config: { maxUpstreamCalls: 1, maxCoalescedRange: 0 } });
    const response = await app.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: MULTIPART },
      body: JSON.stringify({
        query: `query Deferred {
          a: repositories(limit: 1) { items { id } }
          ... @defer { b: repositories(limit: 1, offset: 10) { items { id } } }
        }`,
      }),
    });
    await response.text();
    await expect.poll(() => lines.filter((line) => line.msg === 'request')).toHaveLength(1);
    expect(lines.find((line) => line.msg === 'request')).toMatchObject({
      operationName: 'Deferred',
      status: 200,
      upstreamCalls: 1,
      errors: ['UPSTREAM_BUDGET_EXCEEDED'],
    });
  });
});
