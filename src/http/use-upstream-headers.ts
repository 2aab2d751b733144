import type { Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { requestState } from '../request-state.js';
import type { CompletedCall } from '../upstream/client.js';
import { MAX_PASSED_BACK_NAMES, readValue, stricter } from '../upstream/response-headers.js';
import { addToList } from './headers.js';

/** The IETF fields, passed back as a pair from one call so that they agree. */
const PAIR = new Set(['ratelimit', 'ratelimit-policy']);

interface Pair {
  remaining: number;
  fields: Record<string, string>;
}

/**
 * The least `r=` (or the drafts' `remaining=`) a RateLimit field states; a field without one ranks
 * below any that has, and no field (a lone RateLimit-Policy) last.
 */
function remainingOf(field: string | undefined): number {
  if (field === undefined) return Number.POSITIVE_INFINITY;
  let least = Number.MAX_VALUE;
  for (const match of field.matchAll(/(?:^|[;,\s])(?:r|remaining)=(\d+)/g)) {
    least = Math.min(least, Number(match[1]));
  }
  return least;
}

/**
 * Each header of the calls of all operations, merged to its strictest, a retried call by its last
 * attempt (docs/upstream.md#passed-back-to-the-caller). Undefined when no call brought any.
 */
export function strictestHeaders(
  operations: Iterable<readonly CompletedCall[]>,
): Record<string, string> | undefined {
  let latest: Map<number, CompletedCall['passedBack']> | undefined;
  for (const calls of operations) {
    if (!calls.some((call) => call.passedBack)) continue;
    latest ??= new Map();
    for (const call of calls) latest.set(call.callId, call.passedBack);
  }
  if (!latest) return undefined;
  let merged: Record<string, string> | undefined;
  let names = 0;
  let pair: Pair | undefined;
  for (const headers of latest.values()) {
    if (!headers) continue;
    for (const [name, sent] of Object.entries(headers)) {
      if (PAIR.has(name)) continue;
      const value = readValue(name, sent);
      if (value === undefined) continue;
      merged ??= {};
      const kept = merged[name];
      if (kept !== undefined) merged[name] = stricter(name, kept, value);
      else if (names < MAX_PASSED_BACK_NAMES) {
        merged[name] = value;
        names += 1;
      }
    }
    const remaining = remainingOf(headers.ratelimit);
    const fields = Object.fromEntries(Object.entries(headers).filter(([name]) => PAIR.has(name)));
    if (Object.keys(fields).length > 0 && (!pair || remaining < pair.remaining)) {
      pair = { remaining, fields };
    }
  }
  if (!pair) return merged;
  // The pair takes its place within the bound, ahead of the names merged last.
  const room = MAX_PASSED_BACK_NAMES - Object.keys(pair.fields).length;
  return { ...Object.fromEntries(Object.entries(merged ?? {}).slice(0, room)), ...pair.fields };
}

/**
 * Passes the upstream's rate-limit headers (and UPSTREAM_RESPONSE_HEADERS) back, from this
 * request's own calls. Before compression, which rebuilds the answer from its headers.
 */
export function useUpstreamHeaders(): Plugin<Context, ServerContext> {
  return {
    onExecute({ args }) {
      const context = args.contextValue;
      const state = requestState(context);
      state.upstreamCalls ??= [];
      state.upstreamCalls.push(context.upstreamCalls);
    },
    onResponse({ response, serverContext }) {
      const operations = requestState(serverContext).upstreamCalls;
      const passed = operations && strictestHeaders(operations);
      if (!passed) return;
      const { headers } = response;
      // The facade's own headers win, and the IETF pair goes back only whole.
      const ownPair = headers.has('ratelimit') || headers.has('ratelimit-policy');
      const exposed = headers.has('access-control-expose-headers');
      const added: string[] = [];
      for (const [name, value] of Object.entries(passed)) {
        if (headers.has(name) || (ownPair && PAIR.has(name))) continue;
        headers.set(name, value);
        added.push(name);
      }
      // CORS exposes by name: a `RateLimit-*` name the static list lacks is added per answer.
      if (exposed) addToList(headers, 'access-control-expose-headers', added);
    },
  };
}
