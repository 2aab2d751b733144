import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

export const JSON_TYPE = 'application/json; charset=utf-8';
export const MAX_BODY_BYTES = 1024 * 1024;

/** What a route produces; the server decides how (or whether, under a fault) to write it. */
export interface Reply {
  status: number;
  body: Buffer | string;
  contentType: string;
  headers?: Record<string, string>;
}

/** One parsed non-control request, as the routes see it. */
export interface Exchange {
  method: string;
  path: string;
  rawQuery: string;
  headers: IncomingHttpHeaders;
  /** The values of the route's `{name}` segments, decoded. */
  params: Readonly<Record<string, string>>;
  /** Parsed JSON when `bodyIsJson`, the raw text otherwise, undefined when empty. */
  body: unknown;
  bodyIsJson: boolean;
}

/**
 * One REST route. The server finds it by path and method (404 and 405 otherwise), checks the
 * caller's credential (401), then calls `handle` with the caller's account.
 */
export interface Route {
  method: string;
  /** As the REST API names it: `/git/v1/repo`, or a template such as `/x/v1/items/{id}`. */
  path: string;
  /** The body of the route's error answers, in its spec's shape: an injected fault's, a 500's. */
  errorBody: (text: string) => unknown;
  handle(accountId: string, ctx: Exchange): Reply | Promise<Reply>;
}

/** The error body of most routes. */
export const messageBody = (text: string) => ({ message: text });

export function json(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return { status, body: JSON.stringify(value), contentType: JSON_TYPE, headers };
}

export function message(status: number, text: string): Reply {
  return json(status, messageBody(text));
}

export function sendReply(res: ServerResponse, reply: Reply): void {
  const body = typeof reply.body === 'string' ? Buffer.from(reply.body) : reply.body;
  if (reply.headers) {
    for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
  }
  if (reply.status === 204) {
    res.writeHead(204);
    res.end();
    return;
  }
  res.writeHead(reply.status, { 'content-type': reply.contentType, 'content-length': body.length });
  res.end(body);
}

export class BodyTooLargeError extends Error {}

export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** Reads the whole body as UTF-8, rejecting early (without buffering the rest) past the limit. */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(new BodyTooLargeError());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.off('end', onEnd);
        reject(new BodyTooLargeError());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => resolve(Buffer.concat(chunks).toString('utf8'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', reject);
  });
}

export function decodeJsonBody(text: string): { body: unknown; bodyIsJson: boolean } {
  if (text === '') return { body: undefined, bodyIsJson: false };
  try {
    return { body: JSON.parse(text), bodyIsJson: true };
  } catch {
    return { body: text, bodyIsJson: false };
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
