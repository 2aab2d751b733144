// The floor of `npm run bench`: what the machine can do for the contract's repository queries
// with nothing but node:http, graphql-jit, a pooled undici client and per-request de-duplication
// of identical upstream calls. A reference to measure the facade against, not a product: no
// limits, CSRF, logging, metrics or error mapping, and only `repositories(limit, offset)`.
//
// Written by hand on purpose: any framework here would be part of what the floor is meant to
// leave out. Run compiled (`npm run build:bench` puts it in bench/build/), as the facade is.
//
// With FLOOR_SERVER=yoga the same schema, resolver and client are served by graphql-yoga with
// graphql-jit and nothing else (no plugin of the facade's, Yoga's defaults otherwise): the
// framework path alone, so the benchmark can tell what of the facade's cost is Yoga's and what is
// its own (docs/performance.md).
//
// With FLOOR_CACHE=1 as well, the floor on Yoga keeps answers with Yoga's own response cache
// (@graphql-yoga/plugin-response-cache, per Authorization, 30 s): the nearest stand-in for GraphQL
// Mesh with its response cache turned on, which `npm run bench` compares the facade's cache with.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { useGraphQlJit } from '@envelop/graphql-jit';
import { useResponseCache } from '@graphql-yoga/plugin-response-cache';
import {
  buildSchema,
  type ExecutionResult,
  GraphQLError,
  type GraphQLField,
  parse,
  validate,
} from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { createYoga, type Plugin } from 'graphql-yoga';
import { Pool } from 'undici';

const SDL = `
  type Branch { name: String! target: String! isDefault: Boolean! }
  type Tag { name: String! target: String! message: String }
  type Repository { id: ID defaultBranch: String branches: [Branch!]! tags: [Tag!]! }
  type RepositoryPage { items: [Repository!]! total: Int! offset: Int! hasNextPage: Boolean! }
  type Query { repositories(limit: Int, offset: Int): RepositoryPage }
`;

interface WireRepository {
  id?: string | number | null;
  defaultBranch?: string | null;
  branches?: Record<string, { name?: string; target: string; default: boolean }> | null;
  tags?: Record<string, { name?: string; target: string; message?: string | null }> | null;
}
interface WirePage {
  repositories: WireRepository[];
  total: number;
  offset: number;
}
interface Page {
  items: unknown[];
  total: number;
  offset: number;
  hasNextPage: boolean;
}
/** Per request, on both servers: identical upstream calls share one answer. */
interface FloorContext {
  pages: Map<string, Promise<Page>>;
}

const upstream = new URL(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:4010');
const pool = new Pool(upstream.origin, { connections: 64, keepAliveTimeout: 30_000 });

function toPage(wire: WirePage): Page {
  const items = wire.repositories.map((repo) => ({
    id: repo.id == null ? null : String(repo.id),
    defaultBranch: repo.defaultBranch ?? null,
    branches: Object.entries(repo.branches ?? {}).map(([key, b]) => ({
      name: b.name ?? key,
      target: b.target,
      isDefault: b.default,
    })),
    tags: Object.entries(repo.tags ?? {}).map(([key, t]) => ({
      name: t.name ?? key,
      target: t.target,
      message: t.message ?? null,
    })),
  }));
  return {
    items,
    total: wire.total,
    offset: wire.offset,
    hasNextPage: wire.offset + items.length < wire.total,
  };
}

async function fetchPage(path: string): Promise<Page> {
  const { statusCode, body } = await pool.request({ method: 'GET', path });
  const wire = (await body.json()) as WirePage;
  if (statusCode !== 200) throw new Error(`upstream answered ${statusCode}`);
  return toPage(wire);
}

const schema = buildSchema(SDL);
const repositories = schema.getQueryType()?.getFields().repositories as GraphQLField<
  unknown,
  FloorContext,
  { limit?: number | null; offset?: number | null }
>;
repositories.resolve = (_root, { limit, offset }, context) => {
  const query = new URLSearchParams();
  if (limit != null) query.set('limit', String(limit));
  if (offset != null) query.set('offset', String(offset));
  const path = `/git/v1/repo${query.size > 0 ? `?${query}` : ''}`;
  let page = context.pages.get(path);
  if (!page) {
    page = fetchPage(path);
    context.pages.set(path, page);
  }
  return page;
};

// Parsed, validated and compiled once per query text.
const compiled = new Map<string, CompiledQuery | ExecutionResult>();
function compile(query: string): CompiledQuery | ExecutionResult {
  let entry = compiled.get(query);
  if (!entry) {
    try {
      const document = parse(query);
      const errors = validate(schema, document);
      entry = errors.length > 0 ? { errors } : compileQuery(schema, document);
    } catch (error) {
      entry = { errors: [error instanceof GraphQLError ? error : new GraphQLError(`${error}`)] };
    }
    compiled.set(query, entry);
  }
  return entry;
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.url === '/health') return send(res, 200, '{}');
  if (req.method !== 'POST' || req.url !== '/graphql') return send(res, 404, '{}');
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const params = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    query: string;
    variables?: Record<string, unknown>;
    operationName?: string;
  };
  const query = compile(params.query);
  if (!isCompiledQuery(query)) return send(res, 400, JSON.stringify({ errors: query.errors }));
  const result = await query.query(undefined, { pages: new Map() }, params.variables ?? {});
  send(res, 200, query.stringify(result));
}

function yogaServer() {
  const yoga = createYoga<Record<string, unknown>, FloorContext>({
    schema,
    context: () => ({ pages: new Map() }),
    plugins: [
      useGraphQlJit() as Plugin,
      // After graphql-jit, so that a miss is executed by its compiled query; a hit is answered
      // once the parameters are read, before parsing.
      ...(process.env.FLOOR_CACHE === '1'
        ? [
            useResponseCache({
              session: (request) => request.headers.get('authorization'),
              ttl: 30_000,
            }) as Plugin,
          ]
        : []),
    ],
    graphqlEndpoint: '/graphql',
    healthCheckEndpoint: '/health',
    landingPage: false,
    graphiql: false,
    logging: false,
    // As the facade sets it: Yoga's own cap pipes every body through a transform.
    maxRequestBodySize: false,
  });
  return createServer(yoga);
}

const server =
  process.env.FLOOR_SERVER === 'yoga'
    ? yogaServer()
    : createServer((req, res) => {
        handle(req, res).catch((error: unknown) =>
          send(res, 500, JSON.stringify({ error: `${error}` })),
        );
      });
server.keepAliveTimeout = 30_000;
server.listen(Number(process.env.PORT ?? 4001), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
