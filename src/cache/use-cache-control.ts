import { getOperationAST } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { addVary } from '../http/headers.js';
import { requestState } from '../request-state.js';
import {
  type CachePolicy,
  NO_STORE,
  privateMaxAge,
  strictestOf,
} from '../upstream/cache-policy.js';
import { operationPolicy, staticHint } from './hints.js';

export interface CacheControlOptions {
  /** Every answer depends on the caller, so is `private` whatever the upstream says. */
  perCaller: boolean;
  /** FORWARD_HEADERS: what a kept answer also varies on. */
  forwardHeaders: readonly string[];
}

/**
 * The strictest policy of the operations answered; an error, or a result none of them gave
 * (refused before it executed), keeps nothing.
 */
function answerPolicy(result: unknown, answered: readonly CachePolicy[] = []): CachePolicy {
  if (isAsyncIterable(result)) return NO_STORE;
  const results = (Array.isArray(result) ? result : [result]) as Array<{
    errors?: readonly unknown[];
  } | null>;
  if (answered.length < results.length || results.some((one) => one?.errors?.length)) {
    return NO_STORE;
  }
  return strictestOf(answered) ?? NO_STORE;
}

/**
 * The answer's `Cache-Control` and `Vary`, on every answer GraphQL's or not, on GET and POST alike
 * (docs/caching.md#the-answers-cache-control). An answer with an ETag keeps its own.
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
          // An answer in parts sends its headers now: the ranges its first part read say its age.
          const state = requestState(context);
          for (const { stale } of context.cachedRanges ?? []) {
            if (!stale) continue;
            state.staleAge = Math.max(state.staleAge ?? 0, stale.age);
          }
          // A stream is never kept.
          if (isAsyncIterable(result)) return;
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
      // Browsers get the upstream's max-age; shared caches its s-maxage too.
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
