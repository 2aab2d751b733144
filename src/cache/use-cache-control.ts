import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context } from '../context.js';
import { addVary } from '../http/headers.js';
import { requestState } from '../request-state.js';
import { ANSWER_POLICY, operationPolicy, staticHint, type WithPolicy } from './hints.js';
import { type CachePolicy, NO_STORE, privateMaxAge, strictest } from './policy.js';

export interface CacheControlOptions {
  /**
   * Every answer depends on who asks: the caller's Authorization goes upstream, or callers are
   * checked (CLIENT_TOKENS), or FORWARD_HEADERS passes something of theirs on. Such an answer is
   * `private` whatever the upstream says.
   */
  perCaller: boolean;
  /** FORWARD_HEADERS: what a kept answer also varies on. */
  forwardHeaders: readonly string[];
}

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value;

/** The strictest policy of what an answer holds: an error or a result without one keeps nothing. */
function answerPolicy(result: unknown): CachePolicy {
  if (isAsyncIterable(result)) return NO_STORE;
  const results = Array.isArray(result) ? result : [result];
  let policy: CachePolicy | undefined;
  for (const one of results as Array<(WithPolicy & { errors?: readonly unknown[] }) | null>) {
    const own = one?.errors?.length ? NO_STORE : (one?.[ANSWER_POLICY] ?? NO_STORE);
    policy = policy ? strictest(policy, own) : own;
  }
  return policy ?? NO_STORE;
}

/**
 * The answer's `Cache-Control`, which browsers, CDNs and the routers of a supergraph (Apollo
 * Router, Cosmo, Hive Gateway) read from a subgraph's answer: the strictest policy of its fields
 * (src/cache/hints.ts); `private` whenever it depends on the caller; `private, no-store` for
 * mutations, errors, partial answers, streams, fields without a policy, and every answer that is
 * not GraphQL's (whatever its path: Yoga also serves GraphQL on `/graphql/`). Set on GET and POST
 * alike: HTTP caches keep only GETs, but routers read the header on POSTs. The one exception is an
 * answer that carries a validator (the static GraphiQL page's ETag): it holds nobody's data and
 * is meant to be revalidated.
 *
 * `Vary: Origin` on every answer, the CORS preflight included: what CORS allows depends on the
 * Origin. An answer that may be kept also varies on what shapes it: the credential, the forwarded
 * headers and the media type negotiated from Accept.
 */
export function useCacheControl({ perCaller, forwardHeaders }: CacheControlOptions): Plugin {
  const varyOn = ['Origin', 'Accept', 'Authorization', ...forwardHeaders];
  return {
    onExecute({ args }) {
      const context = args.contextValue as Context;
      return {
        onExecuteDone({ result }) {
          // A stream is answered in parts and never kept; a result the response cache answered
          // already carries the policy it was kept with.
          if (isAsyncIterable(result) || (result as WithPolicy)[ANSWER_POLICY]) return;
          for (const { stale } of context.cachedRanges ?? []) {
            if (!stale) continue;
            const state = requestState(context.request);
            state.staleAge = Math.max(state.staleAge ?? 0, stale.age);
          }
          // Before the response cache's own hook, which keeps the result with what it carries.
          (result as WithPolicy)[ANSWER_POLICY] = operationPolicy({
            operation: getOperationAST(args.document, args.operationName)?.operation,
            hasErrors: Boolean(result.errors?.length),
            hint: staticHint(args.schema, args.document),
            calls: context.upstreamCalls ?? [],
            cached: context.cachedRanges,
            readUnhinted: context.readsWithoutPolicy?.seen ?? false,
          });
        },
      };
    },
    onResultProcess({ request, result }) {
      requestState(request).cachePolicy = answerPolicy(result);
    },
    onResponse({ request, response }) {
      const { cachePolicy: policy, staleAge } = requestState(request);
      // RFC 5861: a stale answer says how old it is (its Cache-Control gives it no lifetime).
      if (staleAge !== undefined) response.headers.set('age', String(staleAge));
      const keeps = !!policy && policy.maxAge > 0 && response.status === 200;
      if (keeps) addVary(response.headers, ...varyOn);
      else addVary(response.headers, 'Origin');
      if (response.headers.has('etag')) return;
      if (!keeps) {
        response.headers.set('cache-control', 'private, no-store');
        return;
      }
      // Browsers get the upstream's max-age; shared caches (a CDN, a router) its s-maxage too.
      const browsers = privateMaxAge(policy);
      if (perCaller || policy.scope === 'PRIVATE') {
        response.headers.set('cache-control', `private, max-age=${browsers}`);
      } else {
        const shared = browsers === policy.maxAge ? '' : `, s-maxage=${policy.maxAge}`;
        response.headers.set('cache-control', `public, max-age=${browsers}${shared}`);
      }
    },
  };
}
