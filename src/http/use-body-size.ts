import type { Plugin } from 'graphql-yoga';
import { FacadeError } from '../errors.js';

const tooLarge = (limit: number) =>
  new FacadeError('BAD_USER_INPUT', `Request body too large: more than ${limit} bytes`, {
    http: { status: 413 },
  });

/** Deeper than any input the schema declares; recursive code past it would run out of stack. */
const MAX_VALUE_DEPTH = 64;

/** The first top-level entry nested deeper than MAX_VALUE_DEPTH, walked without recursion. */
function tooDeep(record: unknown): string | undefined {
  if (typeof record !== 'object' || record === null) return undefined;
  for (const [name, value] of Object.entries(record)) {
    const stack: Array<[unknown, number]> = [[value, 1]];
    while (stack.length > 0) {
      const [next, depth] = stack.pop() as [unknown, number];
      if (typeof next !== 'object' || next === null) continue;
      if (depth > MAX_VALUE_DEPTH) return name;
      for (const child of Object.values(next)) stack.push([child, depth + 1]);
    }
  }
  return undefined;
}

/**
 * MAX_BODY_BYTES. Not Yoga's `maxRequestBodySize`, which pipes every body through a counter
 * (docs/performance.md): Node frames a body by its Content-Length, so only a chunked one is.
 */
export function useBodySizeLimit(limit: number): Plugin {
  return {
    // Before anything hashes, logs or coerces them.
    onParams({ params }) {
      for (const part of ['variables', 'extensions'] as const) {
        const name = tooDeep(params[part]);
        if (name === undefined) continue;
        throw new FacadeError(
          'BAD_USER_INPUT',
          `${part}.${name} is nested deeper than ${MAX_VALUE_DEPTH} levels`,
          { http: { status: 400 } },
        );
      }
    },
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
      const length = request.headers.get('content-length');
      if (length !== null) {
        // "10, 20" or "-1" are smuggling attempts, not lengths.
        if (!/^\d+$/.test(length)) {
          throw new FacadeError('BAD_USER_INPUT', 'Content-Length header is invalid', {
            http: { status: 400 },
          });
        }
        if (Number(length) > limit) throw tooLarge(limit);
        return;
      }
      if (!requestParser || !request.body) return;
      const parse = requestParser;
      setRequestParser((req) => {
        let read = 0;
        const counted = req.body?.pipeThrough(
          new fetchAPI.TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              read += chunk.byteLength;
              if (read > limit) controller.error(tooLarge(limit));
              else controller.enqueue(chunk);
            },
          }),
        );
        return parse(
          new fetchAPI.Request(req.url, {
            method: req.method,
            headers: req.headers,
            signal: req.signal,
            body: counted ?? null,
            duplex: 'half',
          } as RequestInit),
        );
      });
    },
  };
}
