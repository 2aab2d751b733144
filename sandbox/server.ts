import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAccountResolver, UNAUTHORIZED_MESSAGE } from './accounts.js';
import { CONTROL_PREFIX, handleControl } from './control.js';
import { createDevServerRoutes } from './dev-server-routes.js';
import { createDomainRoutes } from './domain-routes.js';
import { applyFault, createFaultTable, type Fault, ROUTE_PATTERN } from './faults.js';
import {
  BodyTooLargeError,
  decodeJsonBody,
  type Exchange,
  hasBody,
  json,
  MAX_BODY_BYTES,
  message,
  messageBody,
  type Reply,
  type Route,
  readBody,
  sendReply,
} from './http-io.js';
import { createRecordedRequests, type RecordedRequest } from './recorded-requests.js';
import { createRepositoryRoutes } from './repository-routes.js';
import { createRouter, type RouteMatch } from './router.js';
import { createTxtLookup } from './txt-records.js';

export type { Fault } from './faults.js';
export type { RecordedRequest } from './recorded-requests.js';

export interface SandboxOptions {
  /** Default 0 (ephemeral). */
  port?: number;
  /** Default '127.0.0.1'. */
  host?: string;
  /** Repositories seeded per account, default 50. */
  repositories?: number;
  /** The upstream's hidden cap on `limit` (a larger limit yields a short page), default 100. */
  maxPageSize?: number;
  /** `limit` when the query omits it, default 20. */
  defaultPageSize?: number;
  /** 'host:port' or 'host' resolvers for the verification's TXT lookup; default: the system's. */
  dnsServers?: string[];
  /** Budget for one TXT lookup, all tries together; default 2000. */
  dnsTimeoutMs?: number;
  /** Enables fault injection (in-process and over HTTP); default false. */
  faults?: boolean;
  /** Ring buffer size of the request log; default 10000. */
  logLimit?: number;
  /** The `Cache-Control` the repository list answers with; default none. */
  repositoryCacheControl?: string;
  /**
   * A request header whose value picks a different list for the same account (a tenant, say):
   * what an upstream that varies on a header looks like. Default: none.
   */
  repositoryVaryHeader?: string;
}

export interface Sandbox {
  /** e.g. http://127.0.0.1:43121, no trailing slash. */
  url: string;
  port: number;
  /** The log, oldest first, excluding /__sandbox/* control calls. */
  requests(): RecordedRequest[];
  clearRequests(): void;
  /** 'GET /git/v1/repo' -> requests received since start or clear (not limited by the log size). */
  counts(): Record<string, number>;
  /**
   * A route like 'GET /git/v1/repo', or 'DELETE /x/v1/items/{id}' for every path of a template;
   * throws unless faults are enabled.
   */
  setFault(route: string, fault: Fault): void;
  clearFaults(): void;
  /** Closes the server and every open (keep-alive) connection. */
  close(): Promise<void>;
}

const EMPTY_BODY = { body: undefined, bodyIsJson: false };

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const faultsEnabled = options.faults ?? false;
  const log = createRecordedRequests(options.logLimit ?? 10_000);
  const faults = createFaultTable();
  const txt = createTxtLookup(options.dnsServers, options.dnsTimeoutMs ?? 2000);
  const resolveAccount = createAccountResolver();
  // The REST routes, each declared in its domain's file.
  const router = createRouter([
    ...createRepositoryRoutes({
      repositories: options.repositories ?? 50,
      maxPageSize: options.maxPageSize ?? 100,
      defaultPageSize: options.defaultPageSize ?? 20,
      cacheControl: options.repositoryCacheControl,
      varyHeader: options.repositoryVaryHeader?.toLowerCase(),
    }),
    ...createDomainRoutes(txt),
    ...createDevServerRoutes(),
  ]);
  const timers = new Set<NodeJS.Timeout>();

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const route = (match: RouteMatch, ctx: Exchange): Reply | Promise<Reply> => {
    const { method, path } = ctx;
    if (!match.route) {
      if (match.allow.length === 0) return message(404, `No route for ${method} ${path}`);
      return {
        ...message(405, `Method ${method} not allowed on ${path}`),
        headers: { allow: match.allow.join(', ') },
      };
    }
    const account = resolveAccount(headerValue(ctx.headers.authorization));
    if (!account) return message(401, UNAUTHORIZED_MESSAGE);
    return match.route.handle(account.id, ctx);
  };

  const answer = (res: ServerResponse, found: Route | undefined, reply: Reply | Promise<Reply>) => {
    if (!(reply instanceof Promise)) {
      sendReply(res, reply);
      return;
    }
    reply.then(
      (settled) => {
        if (!res.destroyed) sendReply(res, settled);
      },
      () => {
        if (!res.destroyed) sendReply(res, internalError(found));
      },
    );
  };

  const dispatch = (req: IncomingMessage, res: ServerResponse, text: string): void => {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    const { body, bodyIsJson } = text === '' ? EMPTY_BODY : decodeJsonBody(text);
    if (path.startsWith(CONTROL_PREFIX)) {
      sendReply(res, handleControl({ log, faults, faultsEnabled }, method, path, body, bodyIsJson));
      return;
    }
    log.record(method, url, path, req.headers, body);
    const match = router(method, path);
    const found = match.route;
    const ctx: Exchange = {
      method,
      path,
      rawQuery: mark === -1 ? '' : url.slice(mark + 1),
      headers: req.headers,
      params: match.params,
      body,
      bodyIsJson,
    };
    const produce = () => safely(() => route(match, ctx), found);
    // A template route's faults are set on its template, as the facade names the route.
    const faultKey = `${method} ${found ? found.path : path}`;
    const fault = faultsEnabled && faults.size > 0 ? faults.take(faultKey) : undefined;
    if (!fault) {
      answer(res, found, produce());
      return;
    }
    const errorBody = found?.errorBody ?? messageBody;
    applyFault(fault, {
      req,
      res,
      produce: async () => produce(),
      errorBody: (status) => errorBody(`Injected fault: HTTP ${status}`),
      sleep,
    }).catch(() => req.socket.destroy());
  };

  const server = createServer((req, res) => {
    if (!hasBody(req)) {
      dispatch(req, res, '');
      return;
    }
    readBody(req, MAX_BODY_BYTES).then(
      (text) => dispatch(req, res, text),
      (error: unknown) => {
        if (!(error instanceof BodyTooLargeError)) {
          req.socket.destroy();
          return;
        }
        const url = req.url ?? '/';
        const path = url.split('?', 1)[0] ?? url;
        if (!path.startsWith(CONTROL_PREFIX)) {
          log.record(req.method ?? 'GET', url, path, req.headers, undefined);
        }
        // The unread rest of the body makes the connection unusable for another request.
        res.setHeader('connection', 'close');
        sendReply(res, message(413, `Request body exceeds ${MAX_BODY_BYTES} bytes`));
        req.resume();
      },
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    requests: () => log.requests(),
    clearRequests: () => log.clear(),
    counts: () => log.counts(),
    setFault(routeKey, fault) {
      if (!faultsEnabled)
        throw new Error('Fault injection is disabled; start the sandbox with faults: true');
      if (!ROUTE_PATTERN.test(routeKey))
        throw new Error(`Fault route must look like 'GET /path', got '${routeKey}'`);
      faults.set(routeKey, fault);
    },
    clearFaults: () => faults.clear(),
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      txt.cancelAll();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function internalError(found: Route | undefined): Reply {
  return json(500, (found?.errorBody ?? messageBody)('Internal server error'));
}

/** A route that throws becomes the route's documented 500 rather than a dropped connection. */
function safely(
  produce: () => Reply | Promise<Reply>,
  found: Route | undefined,
): Reply | Promise<Reply> {
  try {
    return produce();
  } catch {
    return internalError(found);
  }
}
