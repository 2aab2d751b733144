import { type ExecutionResult, getOperationAST } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { requestState } from '../request-state.js';
import { listRepositories } from '../upstream/endpoints.js';
import type { RangeCache } from './ranges.js';
import type { SharedRanges } from './ranges-redis.js';

/** `extensions.upstreamCalls` with the ranges answered from what was kept, when it is shown. */
function withRanges<T extends ExecutionResult>(
  result: T,
  cached: Context['cachedRanges'] | undefined,
): T {
  const shown = result.extensions?.upstreamCalls;
  if (!cached?.length || typeof shown !== 'object' || shown === null) return result;
  return {
    ...result,
    extensions: {
      ...result.extensions,
      upstreamCalls: {
        ...shown,
        cachedRanges: cached.map(({ policy, fields, stale }) => ({
          method: listRepositories.method,
          route: listRepositories.path,
          maxAge: policy.maxAge,
          ...(stale ? { stale } : {}),
          ...(fields ? { fields: [...new Set(fields)] } : {}),
        })),
      },
    },
  };
}

/**
 * A mutation, once it has run, forgets its caller's ranges, in every process before it answers
 * when they are shared, and with them, in the other workers, the caller's answers the response
 * cache keeps in memory; where the upstream calls are shown, so are the ranges answered with none
 * (docs/caching.md#ranges). After the upstreamCalls and responseCache stages.
 */
export function useRangeCache(
  ranges: RangeCache,
  shared?: SharedRanges | undefined,
): Plugin<Context, ServerContext> {
  return {
    onExecute({ args }) {
      const context = args.contextValue;
      const mutation = getOperationAST(args.document, args.operationName)?.operation === 'mutation';
      if (!mutation && !context.call?.showCalls) return;
      return {
        onExecuteDone: async ({ result }) => {
          if (mutation) {
            // Within Redis's deadline: a Redis away leaves the other replicas' to expire.
            // The response cache's session, hashed before execution when the cache is on.
            const answers = requestState(context).cacheSession;
            await Promise.all([
              ranges.evictCaller(context.call, answers),
              shared?.evictCaller(context.call).catch(() => {}),
            ]);
          }
          if (!context.call?.showCalls || !isAsyncIterable(result)) return;
          // An answer in parts shows them on its last part, beside its calls.
          return {
            onNext({ result: part, setResult }) {
              if ((part as { hasNext?: boolean }).hasNext === false)
                setResult(withRanges(part, context.cachedRanges));
            },
          };
        },
      };
    },
    onExecutionResult({ result, setResult, context }) {
      if (!context.call?.showCalls || !result || Symbol.asyncIterator in result) return;
      setResult(withRanges(result, context.cachedRanges));
    },
  };
}
