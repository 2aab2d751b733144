import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { createApp } from '../app.js';
import type { Config } from '../config.js';
import { silentLogger } from '../observability/logger.js';
import { createRateLimiter } from '../plugins/request/use-rate-limit.js';
import { UpstreamClient } from '../upstream/client.js';

/**
 * Before the server listens (so before readiness is true): representative operations through a
 * second app built from the same code, over real HTTP on loopback, against an in-process stand-in
 * for the upstream. V8 then has the request path compiled when the first client arrives, instead
 * of paying for it during the first seconds of load.
 *
 * It must never call the real upstream (the stand-in answers every call) and it leaves nothing
 * behind: its own app, client, rate limiter and servers are closed before it returns. It is bounded
 * by time as well as by count, so a slow machine starts late by at most WARM_UP_MS.
 */
export async function warmUp(config: Config): Promise<{ requests: number; failed: number }> {
  const upstream = await listen(createServer(standInUpstream));
  const client = new UpstreamClient({
    ...config.upstream,
    baseUrl: `http://127.0.0.1:${port(upstream)}`,
    apiKey: undefined,
  });
  // The same kind of limiter as the real app's (memory, never Redis), with room for every request.
  const rateLimiter = await createRateLimiter({
    points: WARM_UP_REQUESTS * 2,
    windowS: 60,
    redisUrl: undefined,
  });
  // Silent: what it answers is thrown away, and nothing of it belongs in the process's log.
  const app = createApp({
    config: warmUpConfig(config),
    client,
    rateLimiter,
    logger: silentLogger(),
  });
  const server = await listen(createServer(app));
  const pool = new Pool(`http://127.0.0.1:${port(server)}`, { connections: CONCURRENCY });
  const deadline = Date.now() + WARM_UP_MS;
  let sent = 0;
  let failed = 0;
  const worker = async () => {
    while (sent < WARM_UP_REQUESTS && Date.now() < deadline) {
      const body = OPERATIONS[sent++ % OPERATIONS.length] as string;
      // A warm-up request that fails (a loopback socket closed under it, say) is counted, never
      // thrown: warming is an optimisation and must not keep the process from starting.
      try {
        const response = await pool.request({
          method: 'POST',
          path: '/graphql',
          headers: { 'content-type': 'application/json' },
          body,
        });
        const text = await response.body.text();
        if (response.statusCode !== 200 || text.includes('"errors"')) failed++;
      } catch {
        failed++;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    return { requests: sent, failed };
  } finally {
    await pool.close();
    await close(server);
    await client.close();
    await rateLimiter?.close();
    await close(upstream);
  }
}

/**
 * The process's configuration without the gates that would refuse the warm-up's own requests
 * (client tokens in service-key mode, trusted documents only) and without Redis: the warm-up runs
 * the request path, and a refused request would warm only the refusal.
 */
function warmUpConfig(config: Config): Config {
  return {
    ...config,
    upstream: { ...config.upstream, apiKey: undefined },
    clientTokens: undefined,
    persistedDocuments: { ...config.persistedDocuments, only: false },
    apq: { ...config.apq, redisUrl: undefined },
  };
}

const WARM_UP_MS = 3_000;
const WARM_UP_REQUESTS = 4_000;
const CONCURRENCY = 16;

const PAGE_FIELDS =
  'total offset hasNextPage items { id defaultBranch branches { name target isDefault } tags { name target message } }';
const operation = (query: string, variables?: Record<string, unknown>) =>
  JSON.stringify({ query, ...(variables ? { variables } : {}) });
const OPERATIONS = [
  operation(`{ repositories(limit: 20) { ${PAGE_FIELDS} } }`),
  operation(
    `{ a: repositories(limit: 20) { ${PAGE_FIELDS} } b: repositories(limit: 20) { total } }`,
  ),
  operation(
    `{ p0: repositories(limit: 20, offset: 0) { ${PAGE_FIELDS} } p1: repositories(limit: 20, offset: 20) { ${PAGE_FIELDS} } }`,
  ),
  operation(
    `query Page($limit: Int, $offset: Int) { repositories(limit: $limit, offset: $offset) { ${PAGE_FIELDS} } }`,
    { limit: 10, offset: 5 },
  ),
  operation(
    '{ repositoriesConnection(first: 5) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { id defaultBranch } } } }',
  ),
  operation('{ __typename }'),
];

// A page of the upstream's list, shaped as the real one (maps of branches and tags), whatever
// limit and offset are asked: the stand-in only has to exercise the facade's code, not page.
const STAND_IN_TOTAL = 1_000;
function standInPage(limit: number, offset: number): string {
  const repositories = Array.from({ length: limit }, (_, i) => {
    const n = offset + i;
    const hash = n.toString(16).padStart(40, '0');
    return {
      id: `repo-${n}`,
      defaultBranch: 'main',
      branches: {
        main: { name: 'main', target: hash, default: true },
        develop: { target: hash, default: false },
      },
      tags: {
        'v1.0.0': { name: 'v1.0.0', target: hash, message: 'Release v1.0.0' },
        'v1.1.0': { target: hash, message: null },
      },
    };
  });
  return JSON.stringify({ repositories, total: STAND_IN_TOTAL, offset });
}

function standInUpstream(request: IncomingMessage, response: ServerResponse): void {
  request.resume();
  const url = new URL(request.url ?? '/', 'http://stand-in');
  if (request.method !== 'GET' || url.pathname !== '/git/v1/repo') {
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"not found"}');
    return;
  }
  const limit = Math.min(Number(url.searchParams.get('limit') ?? 20), 100);
  const offset = Number(url.searchParams.get('offset') ?? 0);
  const body = standInPage(limit, Math.min(offset, STAND_IN_TOTAL));
  response.writeHead(200, { 'content-type': 'application/json' }).end(body);
}

// Exclusive: in a cluster worker a plain listen(0) is routed through the primary, which gives
// every worker's listen(0) on an address the same shared port, so the warm-up's servers would
// share a port with each other, with other workers' warm-ups and with the real server when PORT=0.
function listen(server: Server): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

const port = (server: Server) => (server.address() as AddressInfo).port;
