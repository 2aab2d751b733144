// A second subgraph that follows the Relay conventions too, as a platform team's would: its own
// `Node` interface, `PageInfo` and a `Tag` of its own (release tags), all defined independently of
// the facade's. The facade must compose with it unchanged.
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';
import { createYoga } from 'graphql-yoga';

export const relayTypeDefs = `
extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@shareable"])

type Query {
  node(id: ID!): Node
  labels(first: Int, after: String): LabelConnection!
  releaseTags: [Tag!]!
}

interface Node {
  id: ID!
}

type Label implements Node {
  id: ID!
  name: String!
}

type LabelConnection {
  edges: [LabelEdge!]!
  pageInfo: PageInfo!
}

type LabelEdge {
  cursor: String!
  node: Label!
}

type PageInfo @shareable {
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
  endCursor: String
}

type Tag @shareable {
  name: String!
  target: String!
  message: String
}
`;

/** The facade's share of spanningQuery: both repository lists, each with the facade's `Tag`. */
export const facadeSelection = `
  repositories(limit: 2) { total items { id tags { name target } } }
  repositoriesConnection(first: 2) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node { id tags { name target } } }
  }`;

/** The neighbour's share of spanningQuery: its connection, its `Node` and its own `Tag`. */
export const neighbourSelection = `
  labels(first: 2) { pageInfo { hasNextPage endCursor } edges { node { id name } } }
  releaseTags { name target message }
  node(id: "label-1") { id ... on Label { name } }`;

/** What the neighbour answers to neighbourSelection. */
export const neighbourAnswer = {
  labels: {
    pageInfo: { hasNextPage: true, endCursor: 'label-1' },
    edges: [{ node: { id: 'label-0', name: 'bug' } }, { node: { id: 'label-1', name: 'feature' } }],
  },
  releaseTags: [{ name: 'v1.0.0', target: 'abc123', message: 'First release' }],
  node: { id: 'label-1', name: 'feature' },
};

/**
 * Reads both subgraphs in one operation, the `Tag` both define (`@shareable`) from each side.
 */
export const spanningQuery = `{${facadeSelection}${neighbourSelection}\n}`;

const labels = ['bug', 'feature', 'docs'].map((name, index) => ({ id: `label-${index}`, name }));

export function createRelayApp() {
  const schema = buildSubgraphSchema({
    typeDefs: parse(relayTypeDefs),
    resolvers: {
      Query: {
        node: (_: unknown, { id }: { id: string }) =>
          labels.find((label) => label.id === id) ?? null,
        labels: (_: unknown, { first }: { first?: number }) => {
          const page = labels.slice(0, first ?? labels.length);
          return {
            edges: page.map((node) => ({ cursor: node.id, node })),
            pageInfo: {
              hasNextPage: page.length < labels.length,
              hasPreviousPage: false,
              startCursor: page[0]?.id ?? null,
              endCursor: page.at(-1)?.id ?? null,
            },
          };
        },
        releaseTags: () => [{ name: 'v1.0.0', target: 'abc123', message: 'First release' }],
      },
      Node: { __resolveType: () => 'Label' },
    },
  });
  return createYoga({ schema, graphqlEndpoint: '/graphql', graphiql: false, logging: false });
}
