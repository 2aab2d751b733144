// Writes the contract's exact form: the served schema without federation's plumbing, sorted so that
// diffs stay readable.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GraphQLObjectType, GraphQLSchema, lexicographicSortSchema, printSchema } from 'graphql';
import { schema } from '../src/schema/index.js';

export const schemaPath = fileURLToPath(new URL('../schema.graphql', import.meta.url));

// Defined by the federation spec for gateways, not by our contract (the subgraph SDL that
// `_service { sdl }` answers is the place for `@key`s): clients can ignore them.
const FEDERATION_FIELDS = new Set(['_service', '_entities']);
const FEDERATION_TYPES = new Set(['_Service', '_Entity', '_Any']);

/** The served schema minus `_service`/`_entities` and their types; everything else as served. */
export function contractSchema(served: GraphQLSchema): GraphQLSchema {
  const config = served.toConfig();
  const servedQuery = config.query;
  if (!servedQuery) return served;
  const queryConfig = servedQuery.toConfig();
  const query = new GraphQLObjectType({
    ...queryConfig,
    fields: Object.fromEntries(
      Object.entries(queryConfig.fields).filter(([name]) => !FEDERATION_FIELDS.has(name)),
    ),
  });
  return new GraphQLSchema({
    ...config,
    query,
    types: config.types.filter((type) => type !== servedQuery && !FEDERATION_TYPES.has(type.name)),
  });
}

export const printedSchema = () =>
  `${printSchema(lexicographicSortSchema(contractSchema(schema)))}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(schemaPath, printedSchema());
  console.log(`wrote ${schemaPath}`);
}
