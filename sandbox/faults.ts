import type { IncomingMessage, ServerResponse } from 'node:http';
import { isPlainObject, JSON_TYPE, type Reply, sendReply } from './http-io.js';

export interface Fault {
  /** Answer with this status... */
  status?: number;
  /** ...and this JSON body (a string is sent raw as text). */
  body?: unknown;
  /**
   * Sent with whatever answer follows; alone, the normal answer with these headers too. A list is
   * sent as that many field lines of one name.
   */
  headers?: Record<string, string | string[]>;
  /** Wait before answering; with nothing else set the normal answer follows. */
  delayMs?: number;
  /**
   * Hold the answer until this settles, as `delayMs` does (in-process only): a test opens the gate
   * once it has seen what must happen while the upstream has not answered, instead of guessing a
   * delay long enough for it.
   */
  until?: PromiseLike<unknown>;
  /** 200 with a non-JSON body (text/html). */
  notJson?: boolean;
  /** 200 announcing the full content-length, half the body written, then the socket destroyed. */
  truncate?: boolean;
  /** Destroy the socket without answering. */
  reset?: boolean;
  /** 200 with a valid JSON body of about this many bytes. */
  oversizeBytes?: number;
  /**
   * The normal answer with only its first N repositories: a page answered short for no reason
   * the cap explains (`total` unchanged).
   */
  shortPage?: number;
  /**
   * The normal answer with the value of this request header (lower-case name) appended to every
   * repository's id, `<id>~<value>` (`<id>~` when absent): what a request carried shows in its
   * answer, so an answer served to a request that carried something else is seen.
   */
  echoHeader?: string;
  /** Applies to the next N matching requests only; default: until cleared. */
  times?: number;
}

export const ROUTE_PATTERN = /^[A-Z]+ \/\S*$/;

export interface FaultTable {
  set(route: string, fault: Fault): void;
  /** The fault for this request, consuming one of its `times`. */
  take(route: string): Fault | undefined;
  clear(): void;
  readonly size: number;
}

export function createFaultTable(): FaultTable {
  const faults = new Map<string, { fault: Fault; remaining: number }>();
  return {
    set(route, fault) {
      if (fault.times === 0) {
        faults.delete(route);
        return;
      }
      faults.set(route, { fault, remaining: fault.times ?? Number.POSITIVE_INFINITY });
    },
    take(route) {
      const entry = faults.get(route);
      if (!entry) return undefined;
      entry.remaining -= 1;
      if (entry.remaining <= 0) faults.delete(route);
      return entry.fault;
    },
    clear() {
      faults.clear();
    },
    get size() {
      return faults.size;
    },
  };
}

/** Validates a fault that arrived as JSON over the control route; returns the problem or the fault. */
export function parseFault(value: unknown): Fault | string {
  if (!isPlainObject(value)) return 'fault must be a JSON object';
  const { status, headers, delayMs, oversizeBytes, shortPage, times } = value;
  if (
    status !== undefined &&
    !(Number.isInteger(status) && Number(status) >= 100 && Number(status) <= 599)
  ) {
    return 'status must be an integer between 100 and 599';
  }
  for (const [name, field] of [
    ['delayMs', delayMs],
    ['oversizeBytes', oversizeBytes],
    ['shortPage', shortPage],
    ['times', times],
  ] as const) {
    if (field !== undefined && !(Number.isInteger(field) && Number(field) >= 0)) {
      return `${name} must be a non-negative integer`;
    }
  }
  if (headers !== undefined) {
    const lines = (v: unknown) =>
      typeof v === 'string' || (Array.isArray(v) && v.every((line) => typeof line === 'string'));
    if (!isPlainObject(headers) || !Object.values(headers).every(lines)) {
      return 'headers must be an object of strings or lists of strings';
    }
  }
  if (value.echoHeader !== undefined && typeof value.echoHeader !== 'string')
    return 'echoHeader must be a header name';
  if (value.until !== undefined) return 'until is set in-process only';
  for (const flag of ['notJson', 'truncate', 'reset'] as const) {
    if (value[flag] !== undefined && typeof value[flag] !== 'boolean')
      return `${flag} must be a boolean`;
  }
  return value as Fault;
}

export interface FaultEnvironment {
  req: IncomingMessage;
  res: ServerResponse;
  /** The normal answer, produced only when the fault needs it. */
  produce: () => Promise<Reply>;
  /** The route's error body shape for a bare injected status. */
  errorBody: (status: number) => unknown;
  /** A delay the sandbox can abandon on close. */
  sleep: (ms: number) => Promise<void>;
}

export async function applyFault(fault: Fault, env: FaultEnvironment): Promise<void> {
  const { req, res } = env;
  for (const [name, value] of Object.entries(fault.headers ?? {})) res.setHeader(name, value);
  if (fault.delayMs) await env.sleep(fault.delayMs);
  if (fault.until) await fault.until;
  // The client may have given up while we waited.
  if (req.socket.destroyed) return;

  if (fault.reset) {
    req.socket.destroy();
  } else if (fault.notJson) {
    const html = '<!doctype html><html><body><h1>502 Bad Gateway</h1></body></html>';
    sendReply(res, {
      status: fault.status ?? 200,
      body: html,
      contentType: 'text/html; charset=utf-8',
    });
  } else if (fault.truncate) {
    const full = Buffer.from((await env.produce()).body);
    res.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': full.length });
    // Destroy only once the half is flushed, so the client really sees a short body.
    res.write(full.subarray(0, Math.floor(full.length / 2)), () => req.socket.destroy());
  } else if (fault.oversizeBytes !== undefined) {
    const body = pad(String((await env.produce()).body), fault.oversizeBytes);
    sendReply(res, { status: 200, body, contentType: JSON_TYPE });
  } else if (fault.shortPage !== undefined) {
    const reply = await env.produce();
    sendReply(res, { ...reply, body: shorten(String(reply.body), fault.shortPage) });
  } else if (fault.echoHeader !== undefined) {
    const reply = await env.produce();
    const echoed = header(req.headers[fault.echoHeader.toLowerCase()]);
    if (!req.socket.destroyed) sendReply(res, { ...reply, body: echo(String(reply.body), echoed) });
  } else if (fault.status !== undefined || fault.body !== undefined) {
    const status = fault.status ?? 200;
    const body = fault.body === undefined ? env.errorBody(status) : fault.body;
    sendReply(
      res,
      typeof body === 'string'
        ? { status, body, contentType: 'text/plain; charset=utf-8' }
        : { status, body: JSON.stringify(body), contentType: JSON_TYPE },
    );
  } else {
    const reply = await env.produce();
    if (!req.socket.destroyed) sendReply(res, reply);
  }
}

const header = (value: string | string[] | undefined) =>
  Array.isArray(value) ? value.join(', ') : (value ?? '');

/** A page answer whose repository ids end with `~<value>`; any other body as it was. */
function echo(json: string, value: string): string {
  const page: unknown = JSON.parse(json);
  if (!isPlainObject(page) || !Array.isArray(page.repositories)) return json;
  const repositories = page.repositories.map((repository: unknown) =>
    isPlainObject(repository)
      ? { ...repository, id: `${String(repository.id)}~${value}` }
      : repository,
  );
  return JSON.stringify({ ...page, repositories });
}

/** A page answer with its first `count` repositories; any other body as it was. */
function shorten(json: string, count: number): string {
  const page: unknown = JSON.parse(json);
  if (!isPlainObject(page) || !Array.isArray(page.repositories)) return json;
  return JSON.stringify({ ...page, repositories: page.repositories.slice(0, count) });
}

/**
 * Grows a JSON object to about `bytes` by adding a padding field, so it stays a valid (and
 * otherwise correctly shaped) answer: only its size is wrong.
 */
function pad(json: string, bytes: number): string {
  const trimmed = json.trimEnd();
  const isObject = trimmed.startsWith('{') && trimmed.endsWith('}');
  const base = isObject ? trimmed.slice(0, -1) : `{"original":${trimmed}`;
  const separator = base.endsWith('{') ? '' : ',';
  const prefix = `${base}${separator}"padding":"`;
  const fill = Math.max(0, bytes - Buffer.byteLength(prefix) - 2);
  return `${prefix}${'x'.repeat(fill)}"}`;
}
