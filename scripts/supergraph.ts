// `npm run supergraph`: composes the facade with the example catalog subgraph (examples/) into a
// supergraph SDL that @apollo/gateway, Apollo Router or Hive Gateway can serve. Each subgraph's
// SDL is its own answer to `{ _service { sdl } }`, exactly what a gateway fetching it would get.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { composeServices } from '@apollo/composition';
import { execute, type GraphQLError, type GraphQLSchema, parse } from 'graphql';
import { createCatalogSchema } from '../examples/catalog-subgraph.js';
import { schema as facadeSchema } from '../src/schema/index.js';

export interface SubgraphSource {
  /** The subgraph's name in the supergraph (`join__Graph`). */
  name: string;
  /** Where the gateway will send this subgraph's share of each operation. */
  url: string;
  sdl: string;
}

/** Composition said no; `errors` are composition's own, with their codes. */
export class CompositionFailedError extends Error {
  constructor(readonly errors: readonly GraphQLError[]) {
    super(
      `Composition failed:\n${errors.map((error) => `  ${String(error.extensions.code ?? 'ERROR')}: ${error.message}`).join('\n')}`,
    );
    this.name = 'CompositionFailedError';
  }
}

/** A subgraph's `_service { sdl }`, executed in-process against its schema. */
export async function serviceSdl(schema: GraphQLSchema): Promise<string> {
  const result = await execute({ schema, document: parse('{ _service { sdl } }') });
  const sdl = (result.data?._service as { sdl?: unknown } | undefined)?.sdl;
  if (result.errors?.length || typeof sdl !== 'string') {
    throw new Error(
      `_service { sdl } failed: ${result.errors?.map((e) => e.message).join('; ') ?? 'no sdl'}`,
    );
  }
  return sdl;
}

/** The supergraph SDL; throws CompositionFailedError with composition's errors when it does not compose. */
export function composeSupergraph(subgraphs: readonly SubgraphSource[]): string {
  const result = composeServices(
    subgraphs.map(({ name, url, sdl }) => ({ name, url, typeDefs: parse(sdl) })),
  );
  if (result.errors) throw new CompositionFailedError(result.errors);
  return result.supergraphSdl;
}

/** The facade and the catalog example, at the URLs a gateway will use to reach them. */
export async function exampleSubgraphs(urls: {
  facade: string;
  catalog: string;
}): Promise<SubgraphSource[]> {
  return [
    { name: 'facade', url: urls.facade, sdl: await serviceSdl(facadeSchema) },
    { name: 'catalog', url: urls.catalog, sdl: await serviceSdl(createCatalogSchema()) },
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: 'supergraph.graphql' },
      'facade-url': { type: 'string', default: 'http://localhost:4000/graphql' },
      'catalog-url': { type: 'string', default: 'http://localhost:4001/graphql' },
    },
  });
  const subgraphs = await exampleSubgraphs({
    facade: values['facade-url'],
    catalog: values['catalog-url'],
  });
  try {
    writeFileSync(values.out, composeSupergraph(subgraphs));
    console.log(
      `wrote ${values.out} (${subgraphs.map((s) => `${s.name} at ${s.url}`).join(', ')})`,
    );
  } catch (error) {
    if (!(error instanceof CompositionFailedError)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  }
}
