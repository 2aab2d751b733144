import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { listRepositories } from '../upstream/endpoints.js';
import type { RangeCache } from './ranges.js';

/**
 * A mutation, once it has run, forgets its caller's ranges; where the upstream calls are shown,
 * so are the ranges answered with none (docs/caching.md#ranges). After the upstreamCalls stage.
 */
export function useRangeCache(ranges: RangeCache): Plugin<Context, ServerContext> {
  return {
    onExecute({ args }) {
      const context = args.contextValue;
      if (getOperationAST(args.document, args.operationName)?.operation !== 'mutation') return;
      return {
        onExecuteDone: () => {
          ranges.evictCaller(context.call);
        },
      };
    },
    onExecutionResult({ result, setResult, context }) {
      const cached = context.cachedRanges;
      if (!context.call?.showCalls || !cached?.length || !result || Symbol.asyncIterator in result)
        return;
      const shown = result.extensions?.upstreamCalls;
      if (typeof shown !== 'object' || shown === null) return;
      setResult({
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
      });
    },
  };
}
