import { type StoredRepository, seedRepositories } from './data.js';
import { JSON_TYPE, message, messageBody, type Reply, type Route } from './http-io.js';

export interface RepositoryRouteOptions {
  repositories: number;
  maxPageSize: number;
  defaultPageSize: number;
  /** Sent as `Cache-Control` with every page. */
  cacheControl?: string | undefined;
  /**
   * A request header (lower case) whose value is part of the account, its own list per value, and
   * which the answer names in `Vary`.
   */
  varyHeader?: string | undefined;
}

const INT64_MAX = 9_223_372_036_854_775_807n;
const SEEDED_ACCOUNTS_LIMIT = 1_000;
// Pages are a few KiB to ~100 KiB; bounding bytes rather than entries keeps memory predictable.
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * GET /git/v1/repo. The benchmark needs tens of thousands of requests per second, so a finished
 * page is cached by (account, raw query string): a repeated request costs one Map lookup and hands
 * back the same immutable Reply. Only successes are cached; the data never changes.
 */
export function createRepositoryRoutes(options: RepositoryRouteOptions): Route[] {
  const seeded = new Map<string, StoredRepository[]>();
  const pages = new Map<string, Reply>();
  let cachedBytes = 0;

  const repositoriesOf = (accountId: string): StoredRepository[] => {
    let list = seeded.get(accountId);
    if (!list) {
      if (seeded.size >= SEEDED_ACCOUNTS_LIMIT) seeded.clear();
      list = seedRepositories(accountId, options.repositories);
      seeded.set(accountId, list);
    }
    return list;
  };

  const remember = (key: string, reply: Reply): void => {
    cachedBytes += reply.body.length;
    pages.set(key, reply);
    for (const [oldKey, old] of pages) {
      if (cachedBytes <= PAGE_CACHE_BYTES) break;
      pages.delete(oldKey);
      cachedBytes -= old.body.length;
    }
  };

  const page = (accountId: string, rawQuery: string): Reply => {
    const key = `${accountId}?${rawQuery}`;
    const hit = pages.get(key);
    if (hit) return hit;

    const params = new URLSearchParams(rawQuery);
    const limit = parseCount(params, 'limit');
    if (typeof limit === 'string') return message(400, limit);
    const offset = parseCount(params, 'offset');
    if (typeof offset === 'string') return message(400, offset);

    const all = repositoriesOf(accountId);
    // The upstream's page size cap is not documented: a larger limit silently yields a short page.
    const size = Math.min(limit ?? options.defaultPageSize, options.maxPageSize);
    const start = offset ?? 0;
    const repositories = start >= all.length ? [] : all.slice(start, start + size);
    const body = Buffer.from(JSON.stringify({ repositories, total: all.length, offset: start }));
    const reply: Reply = {
      status: 200,
      body,
      contentType: JSON_TYPE,
      headers: {
        ...(options.cacheControl ? { 'cache-control': options.cacheControl } : {}),
        ...(options.varyHeader ? { vary: options.varyHeader } : {}),
      },
    };
    remember(key, reply);
    return reply;
  };
  const list: Route = {
    method: 'GET',
    path: '/git/v1/repo',
    errorBody: messageBody,
    handle: (accountId, ctx) => {
      const varying = options.varyHeader && ctx.headers[options.varyHeader];
      return page(varying ? `${accountId}/${String(varying)}` : accountId, ctx.rawQuery);
    },
  };
  return [list];
}

/** undefined when absent, the number when valid, else the 400 message naming the parameter. */
function parseCount(params: URLSearchParams, name: string): number | undefined | string {
  const values = params.getAll(name);
  if (values.length === 0) return undefined;
  // Not specified upstream; a repeated parameter is ambiguous, so it is rejected rather than guessed.
  if (values.length > 1) return `Query parameter "${name}" must be given at most once`;
  const raw = values[0] ?? '';
  if (!/^\d{1,19}$/.test(raw) || BigInt(raw) > INT64_MAX) {
    return `Query parameter "${name}" must be an integer between 0 and ${INT64_MAX}, got "${raw}"`;
  }
  return Number(raw);
}
