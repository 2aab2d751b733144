import { hash } from 'node:crypto';
import { getOperationAST } from 'graphql';
import type { GraphQLParams, Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import type { CredentialPolicy } from '../credentials.js';
import { requestState } from '../request-state.js';
import type { KeptAnswer, ResponseStore } from './response-store.js';

/**
 * The session an answer is kept for: a hash of exactly what shapes its upstream calls and who may
 * read it, the caller's Authorization (forwarded as it came, or in service-key mode the caller's
 * own credential, which the contract forbids serving another's answer to) and the values of
 * FORWARD_HEADERS (an absent header apart from an empty one). Nothing else of a request reaches
 * the upstream, so nothing else can make its answer differ.
 */
export function cacheSession(credentials: CredentialPolicy, headers: Headers): string {
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

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value;

export interface ResponseCacheOptions {
  store: ResponseStore;
  credentials: CredentialPolicy;
}

/**
 * Answers kept per caller: a repeated query is answered once its parameters are read, without
 * being parsed, validated or executed, and so without any upstream call; the stages before it
 * (CSRF, rate limit, client tokens, body size, trusted documents, APQ) still run for it. Only an
 * answer whose policy allows it (src/cache/hints.ts) is kept, for at most its max-age. A
 * mutation evicts every answer kept for its caller's session once it has run, failed or not: what
 * it changed upstream is not known from its answer.
 *
 * The keys, the bounded stores and the lookup are the facade's; the store is the Cache interface
 * of @envelop/response-cache. That plugin is not used: it replaces the execute function, which
 * graphql-jit (the `jit` stage) replaces after it, so it warned on every request and never read
 * its TTLs from `@cacheControl` (placed after `jit`, it would turn jit off); and Yoga's wrapper of it adds the cache key (a hash of the
 * caller's credential) to every kept answer as its ETag and answers `If-None-Match` with a 304
 * before the CSRF rule and the rate limit.
 */
export function useResponseCache({
  store,
  credentials,
}: ResponseCacheOptions): Plugin<Context, ServerContext> {
  const session = (request: Request) => cacheSession(credentials, request.headers);
  return {
    onParams({ params, request, setResult, context }) {
      // Yoga's own parameter check, after this hook, answers parameters of the wrong type.
      if (typeof params.query !== 'string') return;
      if (params.operationName != null && typeof params.operationName !== 'string') return;
      const state = requestState(context);
      state.responseCache = 'miss';
      if (store.empty) return;
      const key = cacheKey(session(request), params);
      const answer = (kept: KeptAnswer | null | undefined) => {
        if (!kept) return;
        state.responseCache = 'hit';
        state.operationPolicies ??= [];
        state.operationPolicies.push(kept.policy);
        // Where the calls are shown (src/telemetry/use-upstream-calls.ts), a hit shows none.
        // A new answer, without the kept one's text (its `stringify`), when something is added.
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
        return {
          onExecuteDone: () => store.evictSession(session(request)),
        };
      }
      const since = Date.now();
      return {
        // After the cacheControl stage's hook, which gives the operation its policy; the store
        // keeps only what that policy allows. Not async: an answer that is not kept, nearly every
        // one while no policy allows keeping, passes without a promise to wait for.
        onExecuteDone: ({ result }) => {
          if (isAsyncIterable(result) || result.errors?.length) return;
          const policy = context.cachePolicy;
          if (!(policy?.maxAge ?? 0)) return;
          return store.set(cacheKey(session(request), params), { result, policy }, since);
        },
      };
    },
  };
}
