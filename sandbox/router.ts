import { URLPattern } from 'urlpattern-polyfill/urlpattern';
import type { Route } from './http-io.js';

/** What a request's method and path find. */
export interface RouteMatch {
  /** None: 404 when `allow` is empty too, else 405 (the path has routes for other methods). */
  route: Route | undefined;
  /** The values of the route's `{name}` segments, decoded. */
  params: Readonly<Record<string, string>>;
  allow: readonly string[];
}

/** The routes of one path or template, by method, and a template's pattern. */
interface PathRoutes {
  pattern: URLPattern | undefined;
  methods: Map<string, Route>;
}

const NO_PARAMS: Readonly<Record<string, string>> = {};
const NOT_FOUND: RouteMatch = { route: undefined, params: NO_PARAMS, allow: [] };

/**
 * Finds a request's route by path, then method. A template's `{name}` matches one segment.
 * Fixed paths are a Map lookup, tried first: the benchmark's route is one.
 */
export function createRouter(
  routes: readonly Route[],
): (method: string, path: string) => RouteMatch {
  const byPath = new Map<string, PathRoutes>();
  for (const route of routes) {
    let entry = byPath.get(route.path);
    if (!entry) {
      // URLPattern names a segment `:name`; routes keep the REST API's `{name}`.
      const pathname = route.path.replace(/\{(\w+)\}/g, ':$1');
      const pattern = pathname === route.path ? undefined : new URLPattern({ pathname });
      entry = { pattern, methods: new Map() };
      byPath.set(route.path, entry);
    }
    entry.methods.set(route.method, route);
  }
  const templates = [...byPath.values()].filter((entry) => entry.pattern);

  const match = (entry: PathRoutes, method: string, params: RouteMatch['params']): RouteMatch => ({
    route: entry.methods.get(method),
    params,
    allow: [...entry.methods.keys()],
  });

  return (method, path) => {
    const fixed = byPath.get(path);
    if (fixed && !fixed.pattern) return match(fixed, method, NO_PARAMS);
    for (const entry of templates) {
      const groups = entry.pattern?.exec({ pathname: path })?.pathname.groups;
      const params = groups && decoded(groups);
      if (params) return match(entry, method, params);
    }
    return NOT_FOUND;
  };
}

/** The values decoded, or undefined when one is not valid percent-encoding: no route has it. */
function decoded(groups: Record<string, string | undefined>): Record<string, string> | undefined {
  try {
    return Object.fromEntries(
      Object.entries(groups).map(([name, value]) => [name, decodeURIComponent(value ?? '')]),
    );
  } catch {
    return undefined;
  }
}
