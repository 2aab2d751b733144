// Subscriptions over Apollo's multipart HTTP protocol (subscriptionSpec 1.0), what Apollo Client's
// default HttpLink asks for and Apollo Router serves: each event a part `{"payload": result}`, a
// heartbeat part `{}` while nothing happens, and the closing delimiter when the stream completes
// (docs/clients.md#apollo-client). Yoga answers subscriptions in event streams or not at all: its
// multipart answer is for @defer and @stream, and a subscription that asks for it gets 406.
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { requestState } from '../request-state.js';

/** Apollo Router's interval: well within the idle timeouts of proxies and load balancers. */
const HEARTBEAT_MS = 5_000;
// Each part is followed by the delimiter at once: a client reads a part when the next delimiter
// comes, so an event must not wait for the one after it.
const DELIMITER = '\r\n--graphql';
const part = (json: string) =>
  `\r\ncontent-type: application/json; charset=utf-8\r\n\r\n${json}${DELIMITER}`;
const HEARTBEAT = part('{}');
const CLOSE = '--\r\n';

/** `multipart/mixed` with a `subscriptionSpec` parameter, among the Accept header's types. */
export function asksForMultipartSubscription(accept: string | null): boolean {
  return (accept ?? '')
    .toLowerCase()
    .split(',')
    .some((range) => {
      const [type = '', ...params] = range.split(';').map((piece) => piece.trim());
      return type === 'multipart/mixed' && params.some((param) => /^subscriptionspec=/.test(param));
    });
}

/** A result as JSON, without what graphql-js keeps out of the wire (an error's `originalError`). */
const json = (value: unknown) => JSON.stringify(value);

function multipartResponse(
  events: AsyncIterable<unknown>,
  fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream },
  heartbeatMs: number,
): Response {
  const encoder = new TextEncoder();
  const iterator = events[Symbol.asyncIterator]();
  let heartbeat: NodeJS.Timeout | undefined;
  const body = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      // A first part at once: some proxies hold the headers until the body starts.
      controller.enqueue(encoder.encode(`${DELIMITER}${HEARTBEAT}`));
      heartbeat = setInterval(() => {
        if ((controller.desiredSize ?? 0) > 0) controller.enqueue(encoder.encode(HEARTBEAT));
      }, heartbeatMs);
    },
    async pull(controller) {
      try {
        const step = await iterator.next();
        if (step.done) {
          clearInterval(heartbeat);
          controller.enqueue(encoder.encode(CLOSE));
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(part(json({ payload: step.value }))));
      } catch {
        // The spec's transport error: no payload, and the stream ends.
        clearInterval(heartbeat);
        const failed = { payload: null, errors: [{ message: 'The subscription failed' }] };
        controller.enqueue(encoder.encode(`${part(json(failed))}${CLOSE}`));
        controller.close();
      }
    },
    async cancel() {
      clearInterval(heartbeat);
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(body, {
    status: 200,
    headers: {
      'content-type': 'multipart/mixed;boundary="graphql";subscriptionSpec="1.0"',
      'cache-control': 'no-store',
    },
  });
}

/** Answers a subscription whose Accept asks for it in Apollo's multipart protocol. */
export function useMultipartSubscriptions({
  heartbeatMs = HEARTBEAT_MS,
} = {}): Plugin<Context, ServerContext> {
  return {
    onSubscribe({ args }) {
      requestState(args.contextValue).subscription = true;
    },
    onResultProcess({ request, result, setResultProcessor, serverContext }) {
      // @defer and @stream keep Yoga's own multipart answer.
      if (!isAsyncIterable(result) || !requestState(serverContext).subscription) return;
      if (!asksForMultipartSubscription(request.headers.get('accept'))) return;
      setResultProcessor(
        (events, fetchAPI) =>
          multipartResponse(events as AsyncIterable<unknown>, fetchAPI, heartbeatMs),
        'multipart/mixed',
      );
    },
  };
}
