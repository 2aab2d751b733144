// A small subgraph of our own to compose the facade with: a service catalog that knows which team
// owns a repository and which change ticket covers a domain verification. It adds fields to the
// facade's entities by their `@key`, which is what a platform team's own subgraph would do.
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';
import { createYoga } from 'graphql-yoga';

export const catalogTypeDefs = `
extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key"])

"""Reads of the catalog."""
type Query {
  """Every team in the catalog."""
  teams: [Team!]!
}

"""A team that owns repositories."""
type Team {
  """The team's name."""
  name: String!

  """Where to reach the team."""
  channel: String!
}

# The facade's entities: no descriptions on what the facade defines, so that the supergraph keeps
# the facade's own (composition picks one description per element).
type Repository @key(fields: "id") {
  id: ID

  """The team that owns the repository; null when the repository has no id."""
  owner: Team
}

type DomainVerification @key(fields: "id") {
  id: ID!

  """The change ticket that covers publishing its TXT record."""
  changeTicket: String!
}
`;

interface Team {
  name: string;
  channel: string;
}

export const teams: readonly Team[] = [
  { name: 'platform', channel: '#platform' },
  { name: 'web', channel: '#web' },
  { name: 'data', channel: '#data' },
];

/** Ownership is derived from the id, so the catalog needs no storage and answers the same every time. */
export function ownerOf(id: string): Team {
  const sum = [...id].reduce((total, char) => total + char.charCodeAt(0), 0);
  return teams[sum % teams.length] as Team;
}

export function createCatalogSchema() {
  return buildSubgraphSchema({
    typeDefs: parse(catalogTypeDefs),
    resolvers: {
      Query: { teams: () => teams },
      Repository: {
        // The gateway sends `{ __typename, id }` for each repository the facade returned.
        __resolveReference: (ref: { id: string | null }) => ref,
        owner: (ref: { id: string | null }) => (ref.id === null ? null : ownerOf(ref.id)),
      },
      DomainVerification: {
        __resolveReference: (ref: { id: string }) => ref,
        changeTicket: (ref: { id: string }) => `CHG-${ref.id}`,
      },
    },
  });
}

export function createCatalogApp() {
  return createYoga({
    schema: createCatalogSchema(),
    graphqlEndpoint: '/graphql',
    graphiql: false,
    logging: false,
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.env.PORT ?? 4001);
  createServer(createCatalogApp()).listen(port, () => {
    console.log(`Catalog subgraph listening on http://localhost:${port}/graphql`);
  });
}
