import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { addVary } from '../http/headers.js';
import { requestState } from '../request-state.js';
import { operationPolicy, staticHint } from './hints.js';
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

/**
 * The strictest policy of what an answer holds, from the policies of the operations answered: an
 * error, or a result that none of them gave (refused before it executed), keeps nothing.
 */
function answerPolicy(result: unknown, answered: readonly CachePolicy[] = []): CachePolicy {
  if (isAsyncIterable(result)) return NO_STORE;
  const results = (Array.isArray(result) ? result : [result]) as Array<{
    errors?: readonly unknown[];
  } | null>;
  if (answered.length < results.length || results.some((one) => one?.errors?.length)) {
    return NO_STORE;
  }
  let policy: CachePolicy | undefined;
  for (const own of answered) policy = policy ? strictest(policy, own) : own;
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
export function useCacheControl({
  perCaller,
  forwardHeaders,
}: CacheControlOptions): Plugin<Context, ServerContext> {
  const varyOn = ['Origin', 'Accept', 'Authorization', ...forwardHeaders];
  return {
    onExecute({ args }) {
      const context = args.contextValue;
      return {
        onExecuteDone({ result }) {
          // A stream is answered in parts and never kept.
          if (isAsyncIterable(result)) return;
          const state = requestState(context);
          for (const { stale } of context.cachedRanges ?? []) {
            if (!stale) continue;
            state.staleAge = Math.max(state.staleAge ?? 0, stale.age);
          }
          // Before the response cache's own hook, which keeps the result for this policy.
          context.cachePolicy = operationPolicy({
            operation: getOperationAST(args.document, args.operationName)?.operation,
            hasErrors: Boolean(result.errors?.length),
            hint: staticHint(args.schema, args.document),
            calls: context.upstreamCalls ?? [],
            cached: context.cachedRanges,
            readUnhinted: context.readsWithoutPolicy?.seen ?? false,
          });
          state.operationPolicies ??= [];
          state.operationPolicies.push(context.cachePolicy);
        },
      };
    },
    onResultProcess({ result, serverContext }) {
      const state = requestState(serverContext);
      state.cachePolicy = answerPolicy(result, state.operationPolicies);
    },
    onResponse({ response, serverContext }) {
      const { cachePolicy: policy, staleAge } = requestState(serverContext);
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
