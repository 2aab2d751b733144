import type { IncomingHttpHeaders } from 'node:http';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Lower-cased names. */
  headers: Record<string, string>;
  /** Parsed JSON, the raw string if not JSON, undefined if empty. */
  body: unknown;
}

/**
 * The hot path only stores references (node builds a fresh headers object per request and never
 * mutates it afterwards); splitting the URL and copying headers waits until someone reads the log.
 */
interface Entry {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface RecordedRequests {
  record(
    method: string,
    url: string,
    path: string,
    headers: IncomingHttpHeaders,
    body: unknown,
  ): void;
  requests(): RecordedRequest[];
  counts(): Record<string, number>;
  clear(): void;
}

export function createRecordedRequests(limit: number): RecordedRequests {
  let ring: Entry[] = [];
  let next = 0;
  let counts = new Map<string, number>();

  return {
    record(method, url, path, headers, body) {
      const entry: Entry = { method, url, headers, body };
      if (ring.length < limit) ring.push(entry);
      else if (limit > 0) ring[next] = entry;
      next = limit > 0 ? (next + 1) % limit : 0;
      const key = `${method} ${path}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    },
    requests() {
      const ordered = ring.length < limit ? ring : [...ring.slice(next), ...ring.slice(0, next)];
      return ordered.map(materialize);
    },
    counts() {
      return Object.fromEntries(counts);
    },
    clear() {
      ring = [];
      next = 0;
      counts = new Map();
    },
  };
}

function materialize(entry: Entry): RecordedRequest {
  const mark = entry.url.indexOf('?');
  const path = mark === -1 ? entry.url : entry.url.slice(0, mark);
  const query =
    mark === -1 ? {} : Object.fromEntries(new URLSearchParams(entry.url.slice(mark + 1)));
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(entry.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return { method: entry.method, path, query, headers, body: entry.body };
}
