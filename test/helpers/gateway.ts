// A real federation gateway for the tests: @apollo/gateway plans and executes over the supergraph;
// graphql-yoga is only its HTTP front (@apollo/server is not a dependency of this project).
import { createHash } from 'node:crypto';
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway';
import { getOperationAST, print } from 'graphql';
import { createYoga, type Plugin } from 'graphql-yoga';
import { type Listening, listen } from './net.js';

type GatewayExecutor = Awaited<ReturnType<ApolloGateway['load']>>['executor'];
type GatewayRequestContext = Parameters<GatewayExecutor>[0];

/** What a gateway must pass on to the facade: the caller's credentials, and the request id for logs. */
const FORWARDED_HEADERS = ['authorization', 'x-request-id'] as const;

interface GatewayContext {
  forwarded: Partial<Record<(typeof FORWARDED_HEADERS)[number], string>>;
}

/** Hands Yoga's parsed, validated operation to the gateway's query planner and executor. */
function useGatewayExecutor(executor: GatewayExecutor): Plugin {
  const cache = new Map<string, string>();
  return {
    onExecute({ setExecuteFn }) {
      setExecuteFn(async (args) => {
        const source = print(args.document);
        const operation = getOperationAST(args.document, args.operationName);
        if (!operation) throw new Error('no operation to execute');
        const requestContext: GatewayRequestContext = {
          request: {
            query: source,
            ...(args.operationName ? { operationName: args.operationName } : {}),
            variables: args.variableValues ?? {},
          },
          document: args.document,
          source,
          operation,
          operationName: args.operationName ?? null,
          queryHash: createHash('sha256').update(source).digest('hex'),
          schema: args.schema,
          schemaHash: '' as GatewayRequestContext['schemaHash'],
          context: args.contextValue as GatewayContext,
          cache: {
            get: async (key) => cache.get(key),
            set: async (key, value) => void cache.set(key, value),
            delete: async (key) => cache.delete(key),
          },
          logger: console,
          metrics: {},
          overallCachePolicy: {},
        };
        return executor(requestContext);
      });
    },
  };
}

export interface Gateway extends Listening {
  gateway: ApolloGateway;
}

/** Loads the supergraph (no polling, no network but the subgraphs') and serves it on a loopback port. */
export async function startGateway(supergraphSdl: string): Promise<Gateway> {
  // Otherwise @apollo/gateway probes cloud metadata endpoints and exports usage metrics to Apollo
  // from its constructor: a test must not reach the internet.
  process.env.APOLLO_TELEMETRY_DISABLED = 'true';
  const gateway = new ApolloGateway({
    supergraphSdl,
    logger: { debug: () => {}, info: () => {}, warn: console.warn, error: console.error },
    buildService: ({ url }) =>
      new RemoteGraphQLDataSource<GatewayContext>({
        url,
        willSendRequest({ request, context }) {
          for (const name of FORWARDED_HEADERS) {
            const value = context.forwarded?.[name];
            if (value !== undefined) request.http?.headers.set(name, value);
          }
        },
      }),
  });
  const { schema, executor } = await gateway.load();
  const yoga = createYoga<Record<string, never>, GatewayContext>({
    schema,
    graphiql: false,
    logging: false,
    // Subgraph errors arrive as GraphQLErrors with their codes; pass them on as a gateway does.
    maskedErrors: false,
    context: ({ request }) => ({
      forwarded: Object.fromEntries(
        FORWARDED_HEADERS.flatMap((name) => {
          const value = request.headers.get(name);
          return value === null ? [] : [[name, value]];
        }),
      ),
    }),
    plugins: [useGatewayExecutor(executor)],
  });
  const http = await listen(yoga);
  return {
    gateway,
    url: http.url,
    async close() {
      await http.close();
      await gateway.stop();
    },
  };
}
