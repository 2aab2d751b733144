import type { CallContext, CompletedCall, UpstreamClient } from '../upstream/client.js';
import { type Endpoint, fillPath } from '../upstream/endpoints.js';
import { cancelledError } from '../upstream/responses.js';

/** An answer, and whether it came from a call another request had already started. */
export interface Shared<Out> {
  value: Out;
  joined: boolean;
}

export interface InFlight {
  /**
   * Sends `endpoint` with `input` through the client, or joins the identical read already on its
   * way (same path, query, Authorization sent and forwarded headers). Writes, and every call
   * when joining is off, are sent as they are.
   */
  send<In, Out>(endpoint: Endpoint<In, Out>, input: In, call: CallContext): Promise<Shared<Out>>;
}

export interface InFlightOptions {
  /** JOIN_UPSTREAM_CALLS: false sends every call on its own. */
  enabled: boolean;
  /** Told of every call joined rather than sent, by route, for metrics. */
  onJoin?: ((route: string) => void) | undefined;
}

/** One shared call and the callers waiting for it. */
interface Entry {
  promise: Promise<unknown>;
  /** Callers still waiting; at 0 the call is abandoned (the last one went away). */
  waiting: number;
  /** Aborts the call once its last caller has gone. */
  controller: AbortController;
  /** Every caller's own record of the call's attempts: its log line and `extensions`. */
  listeners: Array<(completed: CompletedCall) => void>;
}

/**
 * The key of a call: exactly what shapes the upstream's answer, as the client sends it, and the
 * caller's own credential (in service-key mode two callers' calls are alike, yet the contract
 * never lets one caller's call serve another: an upstream may still answer per key and time). The
 * request id and the trace context differ per request and say nothing of the answer, so they do
 * not split the key; everything else the client sends is fixed per route. JSON of an array keeps
 * the parts apart whatever they hold, so two different inputs never make one key (no hashing, so
 * no collision either).
 */
export function joinKey<In>(
  endpoint: Endpoint<In, unknown>,
  input: In,
  call: Pick<CallContext, 'authorization' | 'caller' | 'forwarded'>,
): string {
  const query = endpoint.query
    ? Object.entries(endpoint.query(input)).filter(([, value]) => value !== undefined)
    : [];
  const forwarded = Object.entries(call.forwarded ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  return JSON.stringify([
    endpoint.method,
    fillPath(endpoint, input),
    query,
    call.authorization ?? null,
    call.caller ?? null,
    forwarded,
  ]);
}

/**
 * Upstream reads shared across the concurrent requests of one app: an identical GET already on
 * its way is joined instead of sent again, so fifty callers asking for the same page at once cost
 * one call, and never across two credentials or two sets of forwarded headers (the key holds
 * both). Only a call in flight is shared: its answer or its failure goes to the callers waiting
 * for it, and the next caller after it settled makes its own call.
 *
 * - Budget: each caller takes a unit of its own request's MAX_UPSTREAM_CALLS, joined or not, so a
 *   request's answer does not depend on what other requests happen to run at the same time, and
 *   its budget stays a bound on what it may cause on its own.
 * - Cancellation: a caller that goes away stops waiting at once (its field fails as cancelled);
 *   the call goes on for the others and is abandoned only when every caller has gone.
 * - Deadline: the call's deadline started with its first caller, so it ends no later than any
 *   joined caller's own would have.
 * - The call carries its first caller's request id and trace context; the others record it as
 *   `joined`, under that request id, in their own log lines and `extensions.upstreamCalls`.
 */
export function createInFlight(client: UpstreamClient, options: InFlightOptions): InFlight {
  const calls = new Map<string, Entry>();

  function wait<Out>(entry: Entry, call: CallContext): Promise<Out> {
    const signal = call.signal;
    entry.waiting += 1;
    return new Promise<Out>((resolve, reject) => {
      let settled = false;
      const leave = () => {
        if (settled) return;
        settled = true;
        reject(cancelledError());
        entry.waiting -= 1;
        if (entry.waiting === 0) entry.controller.abort(signal?.reason);
      };
      signal?.addEventListener('abort', leave, { once: true });
      entry.promise.then(
        (value) => {
          if (settled) return;
          settled = true;
          signal?.removeEventListener('abort', leave);
          resolve(value as Out);
        },
        (error: unknown) => {
          if (settled) return;
          settled = true;
          signal?.removeEventListener('abort', leave);
          reject(error);
        },
      );
    });
  }

  function start<In, Out>(
    key: string,
    endpoint: Endpoint<In, Out>,
    input: In,
    call: CallContext,
  ): Entry {
    const controller = new AbortController();
    const listeners: Entry['listeners'] = [];
    if (call.onCall) listeners.push(call.onCall);
    const shared: CallContext = {
      authorization: call.authorization,
      requestId: call.requestId,
      trace: call.trace,
      forwarded: call.forwarded,
      callers: call.callers,
      fields: call.fields,
      showCalls: call.showCalls,
      // Not the first caller's: the call outlives it when others wait.
      signal: controller.signal,
      // Each caller took its own unit before waiting.
      budget: undefined,
      onCall: (completed) => {
        for (const listener of listeners) listener(completed);
      },
    };
    const promise = client.send(endpoint, input, shared);
    const entry: Entry = { promise, waiting: 0, controller, listeners };
    calls.set(key, entry);
    // Settled is no longer in flight: a failure is never kept, nor an answer.
    const forget = () => {
      if (calls.get(key) === entry) calls.delete(key);
    };
    promise.then(forget, forget);
    return entry;
  }

  return {
    async send<In, Out>(
      endpoint: Endpoint<In, Out>,
      input: In,
      call: CallContext,
    ): Promise<Shared<Out>> {
      // A caller already gone is the client's to record as such, as an unshared call is.
      if (!options.enabled || endpoint.method !== 'GET' || call.signal?.aborted) {
        return { value: await client.send(endpoint, input, call), joined: false };
      }
      // First, as the client does: a path value refused costs no unit of the budget.
      const key = joinKey(endpoint, input, call);
      call.budget?.take();
      const running = calls.get(key);
      // A call every caller left is being abandoned: it serves no one else.
      if (running && !running.controller.signal.aborted) {
        options.onJoin?.(`${endpoint.method} ${endpoint.path}`);
        const { onCall, callers, fields } = call;
        if (onCall) {
          running.listeners.push((completed) =>
            onCall({ ...completed, callers: callers ?? 1, fields, joined: true }),
          );
        }
        return { value: await wait<Out>(running, call), joined: true };
      }
      const entry = start(key, endpoint, input, call);
      return { value: await wait<Out>(entry, call), joined: false };
    },
  };
}
