import { describe, expect, it } from 'vitest';
import { createHarness, upstreamRequests, useHarness } from '../helpers/harness.js';

type Items = { items: Array<{ id: string }>; total: number; offset: number; hasNextPage: boolean };
const ROUTE = 'GET /git/v1/repo';

describe('batching of repository pages', () => {
  // The sandbox caps pages at 10 items: the facade must fill short pages itself.
  const h = useHarness({
    sandbox: { repositories: 57, maxPageSize: 10 },
    config: { maxCoalescedRange: 40, maxPageSize: 50 },
  });

  /** The ids a client would get by walking the sandbox's own pages. */
  async function directIds(offset: number, limit: number) {
    const ids: string[] = [];
    while (ids.length < limit) {
      const response = await fetch(
        `${h.sandbox.url}/git/v1/repo?limit=${limit - ids.length}&offset=${offset + ids.length}`,
      );
      const page = (await response.json()) as { repositories: Array<{ id: string }> };
      if (page.repositories.length === 0) break;
      ids.push(...page.repositories.map((r) => r.id));
    }
    return ids;
  }

  it('fetches the rest of a page the upstream answered short', async () => {
    const result = await h.gql<{ repositories: Items }>(
      '{ repositories(limit: 25, offset: 5) { total offset hasNextPage items { id } } }',
    );
    const calls = upstreamRequests(h.sandbox, ROUTE).map((r) => r.query);
    expect(calls).toEqual([
      { limit: '25', offset: '5' },
      { limit: '15', offset: '15' },
      { limit: '5', offset: '25' },
    ]);
    expect(result.data?.repositories.items.map((i) => i.id)).toEqual(await directIds(5, 25));
    expect(result.data?.repositories).toMatchObject({ total: 57, offset: 5, hasNextPage: true });
  });

  it('merges overlapping and adjacent pages into one covering call and slices them back', async () => {
    const query = `{
      a: repositories(limit: 5, offset: 0) { total offset hasNextPage items { id } }
      b: repositories(limit: 5, offset: 5) { total offset hasNextPage items { id } }
      c: repositories(limit: 4, offset: 3) { total offset hasNextPage items { id } }
    }`;
    const result = await h.gql<Record<'a' | 'b' | 'c', Items>>(query);
    expect(upstreamRequests(h.sandbox, ROUTE).map((r) => r.query)).toEqual([
      { limit: '10', offset: '0' },
    ]);
    expect(result.data?.a.items.map((i) => i.id)).toEqual(await directIds(0, 5));
    expect(result.data?.b.items.map((i) => i.id)).toEqual(await directIds(5, 5));
    expect(result.data?.c.items.map((i) => i.id)).toEqual(await directIds(3, 4));
    expect(result.data?.b).toMatchObject({ offset: 5, total: 57, hasNextPage: true });
  });

  it('merges aliases of one page, pages of a connection and a plain page alike', async () => {
    const result = await h.gql(`{
      a: repositories(limit: 10) { items { id } }
      b: repositories(limit: 10) { items { id } }
      c: repositoriesConnection(first: 10, after: null) { edges { node { id } } }
    }`);
    expect(result.errors).toBeUndefined();
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
  });

  it('keeps pages apart when the covering range would exceed the bound', async () => {
    await h.gql(
      '{ a: repositories(limit: 10, offset: 0) { items { id } } b: repositories(limit: 10, offset: 45) { items { id } } }',
    );
    expect(upstreamRequests(h.sandbox, ROUTE).map((r) => r.query)).toEqual([
      { limit: '10', offset: '0' },
      { limit: '10', offset: '45' },
    ]);
  });

  it('asks for limit=0 when only total is selected', async () => {
    const result = await h.gql<{ repositories: Items }>('{ repositories(offset: 3) { total } }');
    expect(result.data?.repositories.total).toBe(57);
    expect(upstreamRequests(h.sandbox, ROUTE).map((r) => r.query)).toEqual([
      { limit: '0', offset: '3' },
    ]);
    h.sandbox.clearRequests();
    const withNext = await h.gql<{ repositories: Items }>(
      '{ repositories(limit: 10, offset: 50) { total hasNextPage offset } }',
    );
    expect(withNext.data?.repositories).toEqual({ total: 57, hasNextPage: false, offset: 50 });
    expect(upstreamRequests(h.sandbox, ROUTE).map((r) => r.query)).toEqual([
      { limit: '0', offset: '50' },
    ]);
  });

  it('bounds the follow-up calls of one short page by the budget, spending none it cannot finish', async () => {
    const tiny = await createHarness({ sandbox: { repositories: 100, maxPageSize: 1 } });
    try {
      const result = await tiny.gql<{ repositories: Items | null }>(
        '{ repositories(limit: 60) { hasNextPage items { id } } }',
      );
      // The first answer shows pages of one item: the other 59 calls do not fit in 20.
      expect(upstreamRequests(tiny.sandbox, ROUTE)).toHaveLength(1);
      expect(result.data?.repositories).toBeNull();
      expect(result.errors?.[0]?.extensions.code).toBe('UPSTREAM_BUDGET_EXCEEDED');
    } finally {
      await tiny.close();
    }
  });

  it('never shares answers between requests', async () => {
    await h.gql('{ repositories(limit: 2) { items { id } } }');
    await h.gql('{ repositories(limit: 2) { items { id } } }');
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(2);
  });
});

describe('repositoriesConnection', () => {
  const h = useHarness({ sandbox: { repositories: 12 }, config: { maxPageSize: 5 } });

  const PAGE = `query($first: Int, $after: String) { repositoriesConnection(first: $first, after: $after) {
    totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id } } } }`;
  type Connection = {
    repositoriesConnection: {
      totalCount: number;
      pageInfo: {
        hasNextPage: boolean;
        hasPreviousPage: boolean;
        startCursor: string | null;
        endCursor: string | null;
      };
      edges: Array<{ cursor: string; node: { id: string } }>;
    };
  };

  it('pages through the whole list with the cursors it issues', async () => {
    const direct = (await (await fetch(`${h.sandbox.url}/git/v1/repo?limit=100`)).json()) as {
      repositories: Array<{ id: string }>;
    };
    h.sandbox.clearRequests();
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 5; page++) {
      const result: Awaited<ReturnType<typeof h.gql<Connection>>> = await h.gql<Connection>(PAGE, {
        first: 5,
        after,
      });
      const connection = result.data?.repositoriesConnection;
      expect(connection?.totalCount).toBe(12);
      expect(connection?.pageInfo.hasPreviousPage).toBe(page > 0);
      seen.push(...(connection?.edges.map((e) => e.node.id) ?? []));
      after = connection?.pageInfo.endCursor ?? null;
      if (!connection?.pageInfo.hasNextPage) break;
    }
    expect(seen).toEqual(direct.repositories.map((r) => r.id));
    expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo').map((r) => r.query)).toEqual([
      { limit: '5', offset: '0' },
      { limit: '5', offset: '5' },
      { limit: '5', offset: '10' },
    ]);
  });

  it('rejects a first above MAX_PAGE_SIZE or below 0, and an after it did not issue', async () => {
    for (const [variables, path] of [
      [{ first: 6 }, 'first'],
      [{ first: -1 }, 'first'],
      [{ after: 'not-a-cursor' }, 'after'],
      [{ after: Buffer.from('repositories:-4').toString('base64url') }, 'after'],
      [{ after: Buffer.from('arrayconnection:4').toString('base64') }, 'after'],
    ] as const) {
      const result = await h.gql(PAGE, variables);
      expect(result.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(result.errors?.[0]?.message).toContain(path);
    }
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('keeps its cursor format, so a cursor a client stored still pages', async () => {
    const cursor = (offset: number) => Buffer.from(`repositories:${offset}`).toString('base64url');
    const result = await h.gql<Connection>(PAGE, { first: 2, after: cursor(4) });
    expect(result.data?.repositoriesConnection.edges.map((e) => e.cursor)).toEqual([
      cursor(5),
      cursor(6),
    ]);
    expect(result.data?.repositoriesConnection.pageInfo).toMatchObject({
      startCursor: cursor(5),
      endCursor: cursor(6),
    });
    const empty = await h.gql<Connection>(PAGE, { first: 0 });
    expect(empty.data?.repositoriesConnection.pageInfo).toMatchObject({
      startCursor: null,
      endCursor: null,
    });
  });
});
