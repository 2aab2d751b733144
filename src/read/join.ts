import type { CallContext, CompletedCall, UpstreamClient } from '../upstream/client.js';
import { type Endpoint, fillPath } from '../upstream/endpoints.js';
import { cancelledError } from '../upstream/responses.js';

// Identical upstream reads in flight are joined, never across credentials or forwarded headers:
// docs/upstream.md#shared-calls.

/** An answer, and whether it came from a call another request had already started. */
export interface Shared<Out> {
  value: Out;
  joined: boolean;
}

export interface InFlight {
  send<In, Out>(endpoint: Endpoint<In, Out>, input: In, call: CallContext): Promise<Shared<Out>>;
}

export interface InFlightOptions {
  /** JOIN_UPSTREAM_CALLS. */
  enabled: boolean;
  /** Told of every call joined rather than sent, by route. */
  onJoin?: ((route: string) => void) | undefined;
}

interface Entry {
  promise: Promise<unknown>;
  /** Callers still waiting: the last to go away aborts the call. */
  waiting: number;
  controller: AbortController;
  /** Each caller's record of the call's attempts (its log line, its `extensions`). */
  listeners: Array<(completed: CompletedCall) => void>;
}

/**
 * Exactly what shapes the upstream's answer, and the caller's own credential. Keep the request id
 * and trace context out: they differ per request. JSON of an array keeps the parts apart.
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

/** Waits for the entry's call; a caller that goes away is cancelled at once, the call goes on. */
function wait<Out>(entry: Entry, signal: AbortSignal | undefined): Promise<Out> {
  entry.waiting += 1;
  return new Promise<Out>((resolve, reject) => {
    const leave = () => {
      reject(cancelledError());
      entry.waiting -= 1;
      if (entry.waiting === 0) entry.controller.abort(signal?.reason);
    };
    signal?.addEventListener('abort', leave, { once: true });
    entry.promise.then(
      (value) => {
        signal?.removeEventListener('abort', leave);
        resolve(value as Out);
      },
      (error: unknown) => {
        signal?.removeEventListener('abort', leave);
        reject(error);
      },
    );
  });
}

/**
 * Sends the call for every caller to come: under the first caller's request id and trace context,
 * its deadline, and no budget (each caller took its own unit). Forgotten once settled.
 */
function start<In, Out>(
  client: UpstreamClient,
  calls: Map<string, Entry>,
  key: string,
  endpoint: Endpoint<In, Out>,
  input: In,
  call: CallContext,
): Entry {
  const controller = new AbortController();
  const listeners: Entry['listeners'] = call.onCall ? [call.onCall] : [];
  const promise = client.send(endpoint, input, {
    ...call,
    signal: controller.signal,
    budget: undefined,
    onCall: (completed) => {
      for (const listener of listeners) listener(completed);
    },
  });
  const entry: Entry = { promise, waiting: 0, controller, listeners };
  calls.set(key, entry);
  const forget = () => {
    if (calls.get(key) === entry) calls.delete(key);
  };
  promise.then(forget, forget);
  return entry;
}

/** Upstream reads shared across the concurrent requests of one app. */
export function createInFlight(client: UpstreamClient, options: InFlightOptions): InFlight {
  const calls = new Map<string, Entry>();
  return {
    async send(endpoint, input, call) {
      // A caller already gone is the client's to record, as an unshared call is.
      if (!options.enabled || endpoint.method !== 'GET' || call.signal?.aborted) {
        return { value: await client.send(endpoint, input, call), joined: false };
      }
      // Before the budget: a path value refused costs no unit, as in the client.
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
        return { value: await wait(running, call.signal), joined: true };
      }
      const entry = start(client, calls, key, endpoint, input, call);
      return { value: await wait(entry, call.signal), joined: false };
    },
  };
}
