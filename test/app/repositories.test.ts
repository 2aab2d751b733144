import { describe, expect, it } from 'vitest';
import { type Harness, upstreamRequests, useHarness } from '../helpers/harness.js';

const PAGE = `query($limit: Int, $offset: Int) {
  repositories(limit: $limit, offset: $offset) {
    total offset hasNextPage
    items { id defaultBranch branches { name target isDefault } tags { name target message } }
  }
}`;

interface Page {
  total: number;
  offset: number;
  hasNextPage: boolean;
  items: Array<{
    id: string | null;
    defaultBranch: string | null;
    branches: Array<{ name: string; target: string; isDefault: boolean }>;
    tags: Array<{ name: string; target: string; message: string | null }>;
  }>;
}

/** What the sandbox itself answers for a page, fetched directly. */
async function direct(h: Harness, query: string, token?: string) {
  const response = await fetch(`${h.sandbox.url}/git/v1/repo${query}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return (await response.json()) as {
    repositories: Array<{
      id: string;
      defaultBranch: string;
      branches: Record<string, { default: boolean; name?: string; target: string }>;
      tags: Record<string, { name?: string; target: string; message?: string }>;
    }>;
    total: number;
    offset: number;
  };
}

describe('repositories', () => {
  const h = useHarness({ sandbox: { repositories: 30, maxPageSize: 100 } });

  it('maps a page faithfully and sends limit and offset as given', async () => {
    const result = await h.gql<{ repositories: Page }>(
      PAGE,
      { limit: 5, offset: 3 },
      { authorization: 'Bearer alice' },
    );
    expect(result.errors).toBeUndefined();
    const [request, ...rest] = upstreamRequests(h.sandbox, 'GET /git/v1/repo');
    expect(rest).toHaveLength(0);
    expect(request?.query).toEqual({ limit: '5', offset: '3' });
    expect(request?.headers.authorization).toBe('Bearer alice');
    const page = result.data?.repositories as Page;
    const wire = await direct(h, '?limit=5&offset=3', 'alice');
    expect(page.total).toBe(wire.total);
    expect(page.offset).toBe(3);
    expect(page.hasNextPage).toBe(true);
    expect(page.items).toHaveLength(5);
    page.items.forEach((item, index) => {
      const repo = wire.repositories[index];
      expect(item.id).toBe(repo?.id);
      expect(item.defaultBranch).toBe(repo?.defaultBranch);
      // The upstream's maps, as lists, in the upstream's order; a missing inner name is the key.
      expect(item.branches).toEqual(
        Object.entries(repo?.branches ?? {}).map(([key, b]) => ({
          name: b.name ?? key,
          target: b.target,
          isDefault: b.default,
        })),
      );
      expect(item.tags).toEqual(
        Object.entries(repo?.tags ?? {}).map(([key, t]) => ({
          name: t.name ?? key,
          target: t.target,
          message: t.message ?? null,
        })),
      );
    });
  });

  it('sends neither limit nor offset when they are omitted', async () => {
    const result = await h.gql<{ repositories: Page }>(
      '{ repositories { total offset items { id } } }',
    );
    expect(result.errors).toBeUndefined();
    const [request] = upstreamRequests(h.sandbox, 'GET /git/v1/repo');
    expect(request?.query).toEqual({});
    expect(request?.headers.authorization).toBeUndefined();
    const wire = await direct(h, '');
    expect(result.data?.repositories.items.map((i) => i.id)).toEqual(
      wire.repositories.map((r) => r.id),
    );
  });

  it('treats an explicit null like an omitted argument', async () => {
    await h.gql(PAGE, { limit: null, offset: 2 });
    expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')[0]?.query).toEqual({ offset: '2' });
  });

  it('names a negative limit or offset and makes no upstream call', async () => {
    for (const [variables, path] of [
      [{ limit: -1 }, 'limit'],
      [{ offset: -5 }, 'offset'],
    ] as const) {
      const result = await h.gql(PAGE, variables);
      expect(result.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(result.errors?.[0]?.message).toContain(path);
    }
    const literal = await h.gql('{ repositories(limit: "ten") { total } }');
    expect(literal.errors?.[0]?.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const variable = await h.gql(PAGE, { limit: 'ten' });
    expect(variable.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('computes hasNextPage from offset, items and total', async () => {
    const last = await h.gql<{ repositories: Page }>(PAGE, { limit: 10, offset: 25 });
    expect(last.data?.repositories.items).toHaveLength(5);
    expect(last.data?.repositories.hasNextPage).toBe(false);
    const past = await h.gql<{ repositories: Page }>(PAGE, { limit: 10, offset: 40 });
    expect(past.data?.repositories).toMatchObject({
      items: [],
      total: 30,
      offset: 40,
      hasNextPage: false,
    });
  });

  it('finds one branch or tag by name, or null', async () => {
    const result = await h.gql<{ repositories: { items: Array<Record<string, unknown>> } }>(
      '{ repositories(limit: 1) { items { defaultBranch branch(name: "main") { name isDefault } none: branch(name: "nope") { name } tag(name: "nope") { name } } } }',
    );
    const item = result.data?.repositories.items[0];
    expect(item?.none).toBeNull();
    expect(item?.tag).toBeNull();
    if (item?.defaultBranch === 'main')
      expect(item.branch).toEqual({ name: 'main', isDefault: true });
  });

  it('makes one upstream call for two aliased identical fields', async () => {
    const result = await h.gql(
      '{ a: repositories(limit: 3) { items { id } } b: repositories(limit: 3) { total items { id } } }',
    );
    expect(result.errors).toBeUndefined();
    const b = result.data?.b as { items: unknown } | undefined;
    expect(result.data?.a).toEqual({ items: b?.items });
    expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')).toHaveLength(1);
  });

  it('keeps the data of two tokens apart', async () => {
    const [alice, bob] = await Promise.all([
      h.gql<{ repositories: Page }>(PAGE, { limit: 3 }, { authorization: 'Bearer alice' }),
      h.gql<{ repositories: Page }>(PAGE, { limit: 3 }, { authorization: 'Bearer bob' }),
    ]);
    const ids = (page?: { repositories: Page } | null) => page?.repositories.items.map((i) => i.id);
    expect(ids(alice.data)).toEqual(
      (await direct(h, '?limit=3', 'alice')).repositories.map((r) => r.id),
    );
    expect(ids(bob.data)).toEqual(
      (await direct(h, '?limit=3', 'bob')).repositories.map((r) => r.id),
    );
    expect(ids(alice.data)).not.toEqual(ids(bob.data));
  });
  it('runs the operation operationName names, whichever of the document ran first', async () => {
    // One document, two operations: each request must run its own, not the first one compiled.
    const document = `query Count { repositories(limit: 1) { total } }
      query Ids { repositories(limit: 2) { items { id } } }`;
    const run = async (operationName: string) => {
      const response = await h.app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: document, operationName }),
      });
      return (await response.json()) as { data?: { repositories: Record<string, unknown> } };
    };
    expect((await run('Count')).data?.repositories).toEqual({ total: 30 });
    const ids = (await run('Ids')).data?.repositories;
    expect(Object.keys(ids ?? {})).toEqual(['items']);
    expect(ids?.items).toHaveLength(2);
    expect((await run('Count')).data?.repositories).toEqual({ total: 30 });
  });
});
