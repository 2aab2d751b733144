import type { ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { createTokenMatcher } from '../credentials.js';
import { requestState } from '../request-state.js';
import type { CallContext, CompletedCall } from '../upstream/client.js';

interface UpstreamCallsOptions {
  /** Outside production every answer shows its calls; in production only a debug token's. */
  production: boolean;
  debugToken: string | undefined;
}

/** One logical upstream call as the answer shows it: what it cost, never what it carried. */
interface ShownCall {
  method: string;
  /** The route template (`/git/v1/repo`), never the URL with its ids or query. */
  route: string;
  /** The last attempt's. */
  status: number | string;
  durationMs: number;
  attempts: number;
  fields?: readonly string[];
  /** Another request's identical call, in flight when this one needed it: waited for, not sent. */
  joined?: true;
}

/** Attempts grouped into their logical calls, in the order the calls started. */
function shownCalls(attempts: readonly CompletedCall[]): ShownCall[] {
  const byId = new Map<number, ShownCall>();
  for (const attempt of attempts) {
    const [method = '', route = ''] = attempt.route.split(' ', 2);
    const previous = byId.get(attempt.callId);
    const durationMs = Math.round(attempt.durationMs * 10) / 10;
    if (previous) {
      previous.status = attempt.outcome;
      previous.durationMs = Math.round((previous.durationMs + durationMs) * 10) / 10;
      previous.attempts = Math.max(previous.attempts, attempt.attempt);
      continue;
    }
    byId.set(attempt.callId, {
      method,
      route,
      status: attempt.outcome,
      durationMs,
      attempts: attempt.attempt,
      ...(attempt.fields ? { fields: [...new Set(attempt.fields)] } : {}),
      ...(attempt.joined ? { joined: true as const } : {}),
    });
  }
  return [...byId.values()];
}

/** `extensions.upstreamCalls`, and `extensions.cost` as Hive Gateway's demand control shows it. */
function withCalls<T extends ExecutionResult>(
  result: T,
  call: CallContext,
  context: ServerContext,
): T {
  const { upstreamCalls, cost } = context;
  const { budget } = call;
  const cache = requestState(context).responseCache;
  const extensions = {
    upstreamCalls: {
      calls: shownCalls(upstreamCalls ?? []),
      ...(cache ? { cache } : {}),
      ...(budget ? { budget: { used: budget.limit - budget.left, limit: budget.limit } } : {}),
    },
    ...(cost ? { cost: { estimated: cost.estimated, max: cost.max } } : {}),
  };
  return { ...result, extensions: { ...result.extensions, ...extensions } };
}

/**
 * The REST calls behind an answer (docs/observability.md#the-rest-calls-behind-an-answer): never
 * a credential, body, header or URL with ids. In production, only for DEBUG_TOKEN.
 */
export function useUpstreamCalls({
  production,
  debugToken,
}: UpstreamCallsOptions): Plugin<Context, ServerContext> {
  const isDebugToken = debugToken ? createTokenMatcher([debugToken]) : undefined;
  return {
    onRequest({ request, serverContext }) {
      const token = request.headers.get('x-facade-debug') ?? undefined;
      const shown = production ? token !== undefined && isDebugToken?.(token) === true : true;
      if (shown) requestState(serverContext).showsUpstreamCalls = true;
    },
    onExecute({ args }) {
      const context = args.contextValue;
      // Before any resolver runs: the loaders keep field paths only when they will be shown.
      if (!requestState(context).showsUpstreamCalls) return undefined;
      context.call.showCalls = true;
      return {
        // An answer in parts (@defer, @stream) shows them on its last part, when all are made.
        onExecuteDone: () => ({
          onNext({ result, setResult }) {
            if ((result as { hasNext?: boolean }).hasNext === false) {
              setResult(withCalls(result, context.call, context));
            }
          },
        }),
      };
    },
    onExecutionResult({ result, setResult, context }) {
      // No call: the request was refused or answered before its context was built.
      const { call } = context;
      if (call?.showCalls && result && !(Symbol.asyncIterator in result)) {
        setResult(withCalls(result, call, context));
      }
    },
  };
}
