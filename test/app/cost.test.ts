import { createGatewayRuntime, useCustomFetch } from '@graphql-hive/gateway-runtime';
import { composeServices } from '@theguild/federation-composition';
import {
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  isObjectType,
  Kind,
  type ObjectTypeDefinitionNode,
  parse,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../src/schema/index.js';
import { postGraphQL, useHarness } from '../helpers/harness.js';

const FACADE_URL = 'http://facade.test/graphql';
const MAX_COST = 5000;

interface Costed {
  cost?: { estimated: number; max: number };
}

const REPOSITORY = `id defaultBranch branches { name target isDefault }
  branch(name: "main") { name target } tags { name target message } tag(name: "v1") { name }`;

/**
 * Documents a router and the facade must price alike: every list, page sizes from literals and
 * from variables, the connection, the DNS check, fragments and aliases. Page sizes are given:
 * Hive Gateway counts an omitted slicing argument as 1 rather than `assumedSize`, which the facade
 * does not follow (docs/federation.md).
 */
const DOCUMENTS: Array<{ query: string; variables?: Record<string, unknown> }> = [
  { query: '{ repositories(limit: 3) { total } }' },
  { query: `{ repositories(limit: 20) { total offset hasNextPage items { ${REPOSITORY} } } }` },
  {
    query: `query($n: Int) { a: repositories(limit: $n) { items { id } } b: repositories(limit: 2, offset: 4) { items { tags { name } } } }`,
    variables: { n: 7 },
  },
  {
    query: `{ repositoriesConnection(first: 50) { totalCount pageInfo { hasNextPage endCursor }
      edges { cursor node { ${REPOSITORY} } } } }`,
  },
  {
    // Hive Gateway prices a named fragment where it is defined, not inside the lists that spread
    // it; the facade expands it where it is spread, as the spec does. At the root the two agree.
    query: `query Page($first: Int) { ...Connection }
      fragment Connection on Query {
        repositoriesConnection(first: $first) { edges { node { ... on Repository { id branches { name } } } } }
      }`,
    variables: { first: 9 },
  },
  { query: '{ domainDnsCheck(domain: "example.com") { host values matches error } }' },
  {
    query: `{ repositories(limit: 100) { items { ${REPOSITORY} } }
      repositoriesConnection(first: 100) { edges { node { ${REPOSITORY} } } } }`,
  },
];

describe('the cost directives', () => {
  const h = useHarness({ config: { limits: { maxCost: MAX_COST } } });
  let sdl = '';
  let gateway: ReturnType<typeof createGatewayRuntime>;

  beforeAll(async () => {
    const service = await postGraphQL<{ _service: { sdl: string } }>(h.app, '{ _service { sdl } }');
    sdl = service.data?._service.sdl ?? '';
    const composed = composeServices([{ name: 'facade', typeDefs: parse(sdl), url: FACADE_URL }]);
    expect(composed.errors ?? []).toEqual([]);
    // Hive Gateway's demand control reads @cost and @listSize from the supergraph, prices each
    // subgraph request and shows its estimate as `extensions.cost`, as the facade does.
    gateway = createGatewayRuntime({
      supergraph: composed.supergraphSdl as string,
      logging: false,
      demandControl: { maxCost: MAX_COST, includeExtensionMetadata: true },
      // The subgraph's requests go to the facade's fetch, no port.
      plugins: () => [useCustomFetch((url, init) => h.app.fetch(url, init as RequestInit))],
    });
  });
  afterAll(() => gateway?.dispose());

  it('are in `_service { sdl }`, imported from federation v2.9', () => {
    expect(sdl).toMatch(
      /@link\(url: "https:\/\/specs\.apollo\.dev\/federation\/v2\.9", import: \[[^\]]*"@cost", "@listSize"\]\)/,
    );
    const parsed = parse(sdl);
    const directives = (type: string, field?: string) => {
      const node = parsed.definitions.find(
        (d): d is ObjectTypeDefinitionNode =>
          (d.kind === Kind.OBJECT_TYPE_DEFINITION || d.kind === Kind.OBJECT_TYPE_EXTENSION) &&
          d.name.value === type,
      );
      const target = field ? node?.fields?.find((f) => f.name.value === field) : node;
      return (target?.directives ?? []).map((d) => ({
        name: d.name.value,
        args: Object.fromEntries(
          (d.arguments ?? []).map((a) => [
            a.name.value,
            a.value.kind === Kind.LIST
              ? a.value.values.map((v) => (v.kind === Kind.STRING ? v.value : null))
              : 'value' in a.value
                ? a.value.value
                : null,
          ]),
        ),
      }));
    };
    expect(directives('Query', 'repositories')).toContainEqual({
      name: 'listSize',
      args: {
        slicingArguments: ['limit'],
        sizedFields: ['items'],
        requireOneSlicingArgument: false,
        assumedSize: '100',
      },
    });
    expect(directives('Query', 'repositoriesConnection')).toContainEqual({
      name: 'listSize',
      args: {
        slicingArguments: ['first'],
        sizedFields: ['edges'],
        requireOneSlicingArgument: false,
        assumedSize: '20',
      },
    });
    expect(directives('RepositoryPage')).toContainEqual({ name: 'cost', args: { weight: '10' } });
  });

  it('size every list of objects, so that no router estimates one blind', () => {
    const blind: string[] = [];
    const sizedByParent = new Set(['RepositoryPage.items', 'RepositoryConnection.edges']);
    for (const type of Object.values(schema.getTypeMap())) {
      if (!isObjectType(type) || type.name.startsWith('__')) continue;
      for (const field of Object.values(type.getFields())) {
        const listed = isListType(getNullableType(field.type));
        if (!listed || !isCompositeType(getNamedType(field.type))) continue;
        const sized = field.astNode?.directives?.some((d) => d.name.value === 'listSize');
        const coordinate = `${type.name}.${field.name}`;
        if (!sized && !sizedByParent.has(coordinate) && !coordinate.startsWith('Query._')) {
          blind.push(coordinate);
        }
      }
    }
    expect(blind).toEqual([]);
  });

  it("price every document as Hive Gateway's demand control does from the published SDL", async () => {
    const prices: Array<{ query: string; facade?: number; router?: number }> = [];
    for (const { query, variables } of DOCUMENTS) {
      const facade = await postGraphQL(h.app, query, variables);
      expect(facade.errors).toBeUndefined();
      const router = await postGraphQL(gateway, query, variables);
      expect(router.errors).toBeUndefined();
      prices.push({
        query: query.replace(/\s+/g, ' ').slice(0, 60),
        facade: (facade.extensions as Costed | undefined)?.cost?.estimated,
        router: (router.extensions as Costed | undefined)?.cost?.estimated,
      });
    }
    for (const price of prices) expect(price.facade, price.query).toBe(price.router);
    expect(prices.every((price) => (price.facade ?? 0) > 0)).toBe(true);
  });

  it('refuse the same documents above MAX_COST in the facade and in the router', async () => {
    const costly = `{ ${['a', 'b', 'c']
      .map(
        (alias) =>
          `${alias}: repositoriesConnection(first: 100) { edges { node { ${REPOSITORY} } } }`,
      )
      .join(' ')} }`;
    const facade = await postGraphQL(h.app, costly);
    expect(facade.errors?.[0]?.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(facade.errors?.[0]?.message).toMatch(/cost limit of 5000 exceeded, found 7230/);
    const router = await postGraphQL(gateway, costly);
    expect(router.errors?.[0]?.extensions.code).toBe('COST_ESTIMATED_TOO_EXPENSIVE');
    expect(router.errors?.[0]?.message).toContain('7230');
  });
});
