// `npm run supergraph`: composes the facade with the example catalog subgraph (examples/) into a
// supergraph SDL that @apollo/gateway, Apollo Router or Hive Gateway can serve. Each subgraph's
// SDL is its own answer to `{ _service { sdl } }`, exactly what a gateway fetching it would get.
// With `--serve`, it then serves that supergraph locally with Hive Gateway's runtime.
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/**
 * What the facade needs from a gateway (docs/federation.md#what-the-gateway-must-forward): the
 * caller's credential, its request id and its trace context.
 */
const FORWARDED = ['authorization', 'x-request-id', 'traceparent', 'tracestate', 'baggage'];

export interface ServedSupergraph {
  /** The gateway's GraphQL endpoint, e.g. http://127.0.0.1:4002/graphql. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves a supergraph with Hive Gateway's runtime (a devDependency: a local gateway for trying
 * the composition, not a deployment), forwarding what the facade needs to every subgraph.
 */
export async function serveSupergraph(
  supergraphSdl: string,
  { host = '127.0.0.1', port = 4002 }: { host?: string; port?: number } = {},
): Promise<ServedSupergraph> {
  const { createGatewayRuntime } = await import('@graphql-hive/gateway-runtime');
  const runtime = createGatewayRuntime({
    supergraph: supergraphSdl,
    logging: 'warn',
    propagateHeaders: {
      fromClientToSubgraphs: ({ request }) =>
        Object.fromEntries(
          FORWARDED.flatMap((name) => {
            const value = request.headers.get(name);
            return value === null ? [] : [[name, value]];
          }),
        ),
    },
  });
  const server = createServer(runtime);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/graphql`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.dispose();
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: 'supergraph.graphql' },
      'facade-url': { type: 'string', default: 'http://localhost:4000/graphql' },
      'catalog-url': { type: 'string', default: 'http://localhost:4001/graphql' },
      serve: { type: 'boolean', default: false },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '4002' },
    },
  });
  const subgraphs = await exampleSubgraphs({
    facade: values['facade-url'],
    catalog: values['catalog-url'],
  });
  let supergraph: string | undefined;
  try {
    supergraph = composeSupergraph(subgraphs);
    writeFileSync(values.out, supergraph);
    console.log(
      `wrote ${values.out} (${subgraphs.map((s) => `${s.name} at ${s.url}`).join(', ')})`,
    );
  } catch (error) {
    if (!(error instanceof CompositionFailedError)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  }
  if (supergraph !== undefined && values.serve) {
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65_535) {
      console.error(`--port must be a port number, not ${values.port}`);
      process.exit(1);
    }
    const served = await serveSupergraph(supergraph, { host: values.host, port });
    console.log(`serving the supergraph at ${served.url} (Hive Gateway; Ctrl-C stops it)`);
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => void served.close().then(() => process.exit(0)));
    }
  }
}
