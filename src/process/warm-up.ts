import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Kind, OperationTypeNode, parse } from 'graphql';
import { Pool } from 'undici';
import { createApp, PATHS } from '../app.js';
import type { Config } from '../config.js';
import { createCredentialPolicy } from '../credentials.js';
import { DOCUMENT_ID_PARAM } from '../documents.js';
import { createRateLimiter } from '../security/use-rate-limit.js';
import { createLogger } from '../telemetry/logger.js';
import { UpstreamClient } from '../upstream/client.js';
import { close, listen, origin } from './loopback.js';

export interface WarmUpLimits {
  /** Default: config.warmUpMs. */
  durationMs?: number;
  /** Default: WARM_UP_REQUESTS. */
  requests?: number;
}

/**
 * Before anything that serves exists: representative requests over real HTTP on loopback to an
 * app built by createApp from the process's configuration, against a stand-in for the upstream on
 * loopback. V8 then has the request path optimised when the first client arrives, instead of
 * compiling it during the first seconds of load (docs/performance.md, "The warm-up before
 * listening").
 *
 * The app is the warm-up's own, with its own client, log (written nowhere), metrics, rate limiter
 * and APQ store, all dropped afterwards: nothing of it can reach the upstream, the service's log,
 * metrics, spans, rate limits or Redis, and the serving objects need no way to be turned aside.
 * What carries over is V8's: the compiled and optimised code of the modules both apps run.
 *
 * It must look like real traffic (other headers, probes, GET, connections that close): what the
 * warm-up has not shown V8 deoptimises the optimised code the first time a real client sends it,
 * and the first seconds pay for compiling it again.
 *
 * Bounded by time as well as by count, so a slow machine starts late by at most WARM_UP_MS. A
 * request that fails is counted, never thrown: warming must not keep the process from starting.
 */
export async function warmUp(
  config: Config,
  { durationMs = config.warmUpMs, requests = WARM_UP_REQUESTS }: WarmUpLimits = {},
): Promise<{ requests: number; failed: number }> {
  const upstream = await listen(createServer(standInUpstream()));
  const client = new UpstreamClient({ baseUrl: origin(upstream), ...config.upstream });
  // In memory, with room for every warm-up request: the limiter's code runs, never a 429.
  const rateLimiter =
    config.rateLimit.points > 0
      ? await createRateLimiter({ points: requests * 2, windowS: 60, redisUrl: undefined })
      : undefined;
  const app = createApp({
    config,
    client,
    // Its lines are built as the service's are, so that code is warmed too, and then dropped.
    logger: createLogger(config.logLevel, { write() {} }),
    rateLimiter,
  });
  let server: Server | undefined;
  let pool: Pool | undefined;
  try {
    server = await listen(createServer(app));
    const through = new Pool(origin(server), {
      connections: CONCURRENCY,
      // Connections end and start again as real clients' do: closing one is part of the path.
      maxRequestsPerClient: REQUESTS_PER_CONNECTION,
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
    pool = through;
    const requestsToSend = warmUpRequests(config);
    const deadline = Date.now() + durationMs;
    let sent = 0;
    let failed = 0;
    const worker = async () => {
      while (sent < requests && Date.now() < deadline) {
        const request = requestsToSend[sent++ % requestsToSend.length] as WarmUpRequest;
        try {
          const response = await through.request(request);
          const text = await response.body.text();
          if (response.statusCode !== 200 || text.includes('"errors"')) failed++;
        } catch {
          failed++;
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    return { requests: sent, failed };
  } finally {
    await pool?.close();
    if (server) await close(server);
    await client.close();
    await rateLimiter?.close();
    await close(upstream);
  }
}

const WARM_UP_REQUESTS = 20_000;
const CONCURRENCY = 16;
const REQUESTS_PER_CONNECTION = 100;
const REQUEST_TIMEOUT_MS = 5_000;
/** One in this many requests is a liveness probe, as a cluster's kubelet sends. */
const PROBE_EVERY = 50;

interface WarmUpRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

const PAGE_FIELDS =
  'total offset hasNextPage items { id defaultBranch branches { name target isDefault } tags { name target message } }';
const OPERATIONS: Record<string, unknown>[] = [
  { query: `{ repositories(limit: 20) { ${PAGE_FIELDS} } }` },
  {
    query: `{ a: repositories(limit: 20) { ${PAGE_FIELDS} } b: repositories(limit: 20) { total } }`,
  },
  {
    query: `{ p0: repositories(limit: 20, offset: 0) { ${PAGE_FIELDS} } p1: repositories(limit: 20, offset: 20) { ${PAGE_FIELDS} } }`,
  },
  {
    query: `query Page($limit: Int, $offset: Int) { repositories(limit: $limit, offset: $offset) { ${PAGE_FIELDS} } }`,
    variables: { limit: 10, offset: 5 },
  },
  {
    query:
      '{ repositoriesConnection(first: 5) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { id defaultBranch } } } }',
  },
  { query: '{ __typename }' },
];

/**
 * The headers of the clients the facade meets: a bare one, fetch in Node or a browser, urql's.
 * None asks for compression: zlib's buffers would stay resident in a process whose clients may
 * never want it.
 */
const FETCH_HEADERS: Record<string, string> = {
  accept: '*/*',
  'accept-language': '*',
  'accept-encoding': 'identity',
  'sec-fetch-mode': 'cors',
  'user-agent': 'node',
};
const CLIENT_HEADERS: Record<string, string>[] = [
  {},
  FETCH_HEADERS,
  { accept: 'application/graphql-response+json, application/graphql+json, application/json' },
  { accept: 'application/json', 'user-agent': 'Mozilla/5.0', 'x-request-id': 'warm-up' },
];

/**
 * What the warm-up sends, in order, round and round: its operations (or, where only trusted
 * documents run, the trusted queries by id), by POST and by GET, with each client's headers, and
 * now and then a liveness probe. Never a mutation: the stand-in answers reads only, and a
 * warm-up must not even look like a write. Where clients must present a token (service-key
 * mode's CLIENT_TOKENS), it presents one of them: the request is the process's own, on loopback.
 */
function warmUpRequests(config: Config): WarmUpRequest[] {
  const { documents, only } = config.persistedDocuments;
  const bodies: Record<string, unknown>[] =
    only && documents
      ? [...documents]
          .filter(([, text]) => isQuery(text))
          .map(([id]) => ({ [DOCUMENT_ID_PARAM]: id }))
      : OPERATIONS;
  const { ownAuthorization } = createCredentialPolicy(config);
  const auth: Record<string, string> = ownAuthorization ? { authorization: ownAuthorization } : {};
  const requests: WarmUpRequest[] = [];
  for (const [i, body] of bodies.entries()) {
    for (const [j, headers] of CLIENT_HEADERS.entries()) {
      // Every fourth of them over GET, as GraphQL over HTTP allows for queries; with the header
      // that tells the CSRF check a page could not have sent it, as Apollo Client's GET does.
      const get = (i + j) % 4 === 3;
      requests.push(
        get
          ? {
              method: 'GET',
              path: `${PATHS.graphql}?${searchParams(body)}`,
              headers: { ...headers, ...auth, 'apollo-require-preflight': 'true' },
            }
          : {
              method: 'POST',
              path: PATHS.graphql,
              headers: { 'content-type': 'application/json', ...headers, ...auth },
              body: JSON.stringify(body),
            },
      );
    }
  }
  // Interleaved with liveness probes (never /readiness: with READINESS_CHECK_UPSTREAM it calls
  // the upstream; nor /metrics: in a cluster worker it asks the primary).
  const probe: WarmUpRequest = { method: 'GET', path: PATHS.health, headers: FETCH_HEADERS };
  return requests.flatMap((request, i) =>
    i % PROBE_EVERY === PROBE_EVERY - 1 ? [request, probe] : [request],
  );
}

function isQuery(document: string): boolean {
  try {
    return parse(document).definitions.every(
      (definition) =>
        definition.kind !== Kind.OPERATION_DEFINITION ||
        definition.operation === OperationTypeNode.QUERY,
    );
  } catch {
    return false;
  }
}

function searchParams(body: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(body))
    params.set(key, typeof value === 'string' ? value : JSON.stringify(value));
  return params.toString();
}

/**
 * A page of the upstream's list, whatever limit and offset are asked: the stand-in only has to
 * exercise the facade's code, not page. Its objects have the upstream's fields in the order its
 * description gives (branch: default, name, target; tag: name, target, message) and its optional
 * ones left out now and then, as the real answers do: a shape the warm-up never showed would
 * undo the decoder's optimised code at the first real answer. Each page is built once.
 */
const STAND_IN_TOTAL = 1_000;
function standInPage(limit: number, offset: number): string {
  const repositories = Array.from({ length: limit }, (_, i) => {
    const n = offset + i;
    const hash = n.toString(16).padStart(40, '0');
    const tags: Record<string, Record<string, string>> = {
      'v1.0.0': { name: 'v1.0.0', target: hash, message: 'Release v1.0.0' },
      'v1.1.0': { name: 'v1.1.0', target: hash },
    };
    if (n % 7 === 6) tags['v0.9.0'] = { target: hash, message: 'Release v0.9.0' };
    return {
      id: `repo-${n}`,
      defaultBranch: 'main',
      branches: {
        main: { default: true, name: 'main', target: hash },
        ...(n % 3 === 0 ? {} : { develop: { default: false, name: 'develop', target: hash } }),
      },
      tags,
    };
  });
  return JSON.stringify({ repositories, total: STAND_IN_TOTAL, offset });
}

function standInUpstream(): (request: IncomingMessage, response: ServerResponse) => void {
  const pages = new Map<string, string>();
  return (request, response) => {
    request.resume();
    const url = new URL(request.url ?? '/', 'http://stand-in');
    // Whatever path prefix UPSTREAM_URL has, the client keeps it in front of the route.
    if (request.method !== 'GET' || !url.pathname.endsWith('/git/v1/repo')) {
      response
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"message":"not found"}');
      return;
    }
    const limit = Math.min(Number(url.searchParams.get('limit') ?? 20), 100);
    const offset = Math.min(Number(url.searchParams.get('offset') ?? 0), STAND_IN_TOTAL);
    const key = `${limit}:${offset}`;
    let body = pages.get(key);
    if (body === undefined) {
      body = standInPage(limit, offset);
      pages.set(key, body);
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  };
}
