// Real federation gateways for the tests. @apollo/gateway plans and executes over the supergraph,
// with graphql-yoga only as its HTTP front (@apollo/server is not a dependency of this project);
// Hive Gateway (@graphql-hive/gateway-runtime) is a server of its own.
import { createHash } from 'node:crypto';
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway';
import { createGatewayRuntime } from '@graphql-hive/gateway-runtime';
import { getOperationAST, print } from 'graphql';
import { createYoga, type Plugin } from 'graphql-yoga';
import { type Listening, listen } from './net.js';

type GatewayExecutor = Awaited<ReturnType<ApolloGateway['load']>>['executor'];
type GatewayRequestContext = Parameters<GatewayExecutor>[0];

/**
 * What a gateway must pass on to the facade: the caller's credentials, the request id for logs,
 * and the caller's W3C trace context (a gateway without tracing of its own passes it as it came).
 */
const FORWARDED_HEADERS = [
  'authorization',
  'x-request-id',
  'traceparent',
  'tracestate',
  'baggage',
] as const;

/** One subgraph's federated trace (ftv1) as the gateway received it, decoded. */
export interface ReceivedFtv1 {
  serviceName: string;
  /** Top-level field names of the subgraph's trace. */
  rootFields: string[];
}

interface GatewayContext {
  forwarded: Partial<Record<(typeof FORWARDED_HEADERS)[number], string>>;
}

/** Hands Yoga's parsed, validated operation to the gateway's query planner and executor. */
function useGatewayExecutor(
  executor: GatewayExecutor,
  onFtv1: (traces: ReceivedFtv1[]) => void,
): Plugin {
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
          // As Apollo Server sets it when it reports usage: the gateway then asks each subgraph
          // for its federated trace (`apollo-federation-include-trace: ftv1`).
          metrics: { captureTraces: true, startHrTime: process.hrtime() },
          overallCachePolicy: {},
        };
        const result = await executor(requestContext);
        onFtv1(fetchTraces(requestContext.metrics.queryPlanTrace));
        return result;
      });
    },
  };
}

interface PlanNode {
  fetch?: { serviceName?: string; trace?: { root?: { child?: Array<{ responseName?: string }> } } };
  sequence?: { nodes?: PlanNode[] };
  parallel?: { nodes?: PlanNode[] };
  flatten?: { node?: PlanNode };
}

/** The ftv1 traces of every fetch of a query plan's trace. */
function fetchTraces(node: unknown): ReceivedFtv1[] {
  const plan = node as PlanNode | undefined;
  if (!plan) return [];
  if (plan.fetch) {
    const trace = plan.fetch.trace;
    return trace
      ? [
          {
            serviceName: plan.fetch.serviceName ?? '',
            rootFields: (trace.root?.child ?? []).map((child) => child.responseName ?? ''),
          },
        ]
      : [];
  }
  const children = [
    ...(plan.sequence?.nodes ?? []),
    ...(plan.parallel?.nodes ?? []),
    ...(plan.flatten?.node ? [plan.flatten.node] : []),
  ];
  return children.flatMap(fetchTraces);
}

export interface Gateway extends Listening {
  gateway: ApolloGateway;
  /** The federated traces the subgraphs answered for the last operation. */
  lastFtv1: ReceivedFtv1[];
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
    plugins: [
      useGatewayExecutor(executor, (traces) => {
        served.lastFtv1 = traces;
      }),
    ],
  });
  const http = await listen(yoga);
  const served: Gateway = {
    gateway,
    lastFtv1: [],
    url: http.url,
    async close() {
      await http.close();
      await gateway.stop();
    },
  };
  return served;
}

/**
 * Serves the supergraph with Hive Gateway on a loopback port: no polling, no Hive or GraphOS
 * reporting, the same headers forwarded as @apollo/gateway's (`propagateHeaders`, as
 * docs/federation.md tells a platform team).
 */
export async function startHiveGateway(supergraphSdl: string): Promise<Listening> {
  const runtime = createGatewayRuntime({
    supergraph: supergraphSdl,
    logging: false,
    graphiql: false,
    // Subgraph errors pass on with their codes, as from @apollo/gateway.
    maskedErrors: false,
    propagateHeaders: {
      fromClientToSubgraphs: ({ request }) =>
        Object.fromEntries(
          FORWARDED_HEADERS.flatMap((name) => {
            const value = request.headers.get(name);
            return value === null ? [] : [[name, value]];
          }),
        ),
    },
  });
  const http = await listen(runtime);
  return {
    url: http.url,
    async close() {
      await http.close();
      await runtime.dispose();
    },
  };
}
