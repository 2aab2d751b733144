import { hash } from 'node:crypto';
import { getOperationAST } from 'graphql';
import { type GraphQLParams, isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import type { CredentialPolicy } from '../credentials.js';
import { requestState } from '../request-state.js';
import type { KeptAnswer, ResponseStore } from './response-store.js';

/**
 * A hash of exactly what of a request reaches the upstream: the caller's credential and the
 * forwarded headers (docs/caching.md#the-response-cache).
 */
function cacheSession(credentials: CredentialPolicy, headers: Headers): string {
  const inputs = JSON.stringify([
    credentials.callerCredential(headers) ?? null,
    credentials.forwardedHeaders(headers) ?? null,
  ]);
  return hash('sha256', inputs, 'base64url');
}

/** The operation, its name and variables, under the session (the prefix evictSession uses). */
function cacheKey(session: string, params: GraphQLParams): string {
  const operation = hash(
    'sha256',
    `${params.query ?? ''}\0${params.operationName ?? ''}\0${JSON.stringify(params.variables ?? {})}`,
    'base64url',
  );
  return `${session}:${operation}`;
}

export interface ResponseCacheOptions {
  store: ResponseStore;
  credentials: CredentialPolicy;
}

/**
 * Answers kept per session, a hit answered once the parameters are read; a mutation evicts its
 * session's answers once it has run, failed or not (docs/caching.md#the-response-cache).
 */
export function useResponseCache({
  store,
  credentials,
}: ResponseCacheOptions): Plugin<Context, ServerContext> {
  // Hashed once per request: a miss that is kept, or a mutation, needs it again after execution.
  const session = (carrier: ServerContext, request: Request) => {
    const state = requestState(carrier);
    state.cacheSession ??= cacheSession(credentials, request.headers);
    return state.cacheSession;
  };
  return {
    onParams({ params, request, setResult, context }) {
      // Yoga's own parameter check, after this hook, answers parameters of the wrong type.
      if (typeof params.query !== 'string') return;
      if (params.operationName != null && typeof params.operationName !== 'string') return;
      const state = requestState(context);
      state.responseCache = 'miss';
      if (store.empty) return;
      const key = cacheKey(session(context, request), params);
      const answer = (kept: KeptAnswer | null | undefined) => {
        if (!kept) return;
        state.responseCache = 'hit';
        state.operationPolicies ??= [];
        state.operationPolicies.push(kept.policy);
        // A hit shows no calls; adding to it needs a new answer, without the kept text.
        setResult(
          state.showsUpstreamCalls
            ? {
                data: kept.data,
                extensions: { ...kept.extensions, upstreamCalls: { calls: [], cache: 'hit' } },
              }
            : kept,
        );
      };
      const kept = store.get(key);
      return kept instanceof Promise ? kept.then(answer) : answer(kept);
    },
    onExecute({ args }) {
      const context = args.contextValue;
      const { request, params } = context;
      if (getOperationAST(args.document, args.operationName)?.operation === 'mutation') {
        // Hashed before execution: the kept ranges' eviction, later in the pipeline, sends it to
        // the other workers beside the caller's ranges.
        const name = session(context, request);
        return {
          onExecuteDone: () => store.evictSession(name),
        };
      }
      const since = Date.now();
      return {
        // After the cacheControl stage's hook, which sets the policy. Not async, so that an
        // answer not kept passes without a promise to wait for.
        onExecuteDone: ({ result }) => {
          if (isAsyncIterable(result) || result.errors?.length) return;
          const policy = context.cachePolicy;
          if (!(policy?.maxAge ?? 0)) return;
          return store.set(cacheKey(session(context, request), params), { result, policy }, since);
        },
      };
    },
  };
}
