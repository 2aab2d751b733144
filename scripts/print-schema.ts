// schema.graphql is the schema the facade serves, whole: what an app answers to the introspection
// query (every type and field, `_service` included, and every directive it defines beyond the
// built-ins: @defer and @stream), sorted so that diffs stay readable. `--subgraph` prints the
// subgraph SDL that `_service { sdl }` answers instead (with @link, @key, @shareable, @cost and
// @listSize), the file a schema registry takes (docs/federation.md).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  buildClientSchema,
  type GraphQLSchema,
  getIntrospectionQuery,
  type IntrospectionQuery,
  lexicographicSortSchema,
  printSchema,
} from 'graphql';
import { createApp } from '../src/app.js';
import { defaultConfig } from '../src/config/load.js';
import { UpstreamClient } from '../src/upstream/client.js';

export const schemaPath = fileURLToPath(new URL('../schema.graphql', import.meta.url));

/** What the facade answers a POST of `query` with: an app of the defaults, no upstream call. */
async function ask<T>(query: string): Promise<T> {
  const config = defaultConfig();
  // Never called: introspection and `_service` answer from the schema alone.
  const client = new UpstreamClient({ baseUrl: 'http://127.0.0.1:9', ...config.upstream });
  try {
    const app = createApp({ config, client });
    const response = await app.fetch('http://facade.local/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query }),
    });
    const body = (await response.json()) as { data?: T; errors?: unknown[] };
    if (!body.data || body.errors) throw new Error(`the facade refused: ${JSON.stringify(body)}`);
    return body.data;
  } finally {
    await client.close();
  }
}

/** The schema as the facade serves it to a client, read through its own introspection. */
export async function servedSchema(): Promise<GraphQLSchema> {
  const introspection = await ask<IntrospectionQuery>(
    getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      inputValueDeprecation: true,
    }),
  );
  return buildClientSchema(introspection);
}

/** The subgraph SDL, as `_service { sdl }` answers it. */
export async function subgraphSdl(): Promise<string> {
  const data = await ask<{ _service: { sdl: string } }>('{ _service { sdl } }');
  return `${data._service.sdl.trim()}\n`;
}

export const printSchemaFile = (schema: GraphQLSchema) =>
  `${printSchema(lexicographicSortSchema(schema))}\n`;

export const printedSchema = async () => printSchemaFile(await servedSchema());

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--subgraph')) {
    process.stdout.write(await subgraphSdl());
  } else {
    writeFileSync(schemaPath, await printedSchema());
    console.log(`wrote ${schemaPath}`);
  }
}
