// Subscriptions read as a client reads them: graphql-sse's client (distinct connections, what Yoga
// serves), over an app's fetch or a URL.
import { type Client, createClient } from 'graphql-sse';

export interface DnsCheckEvent {
  data?: {
    domainDnsCheck: {
      host: string;
      values: string[];
      matches: boolean | null;
      error: string | null;
    };
  } | null;
  errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
}

export const WATCH = `subscription Watch($domain: String!, $code: String) {
  domainDnsCheck(domain: $domain, verificationCode: $code) { host values matches error }
}`;

type FetchTarget =
  | string
  | { fetch: (url: string, init: RequestInit) => Promise<Response> | Response };

/** A graphql-sse client of `target`, sending `headers` with each subscription. */
export function sseClient(target: FetchTarget, headers: Record<string, string> = {}): Client {
  return createClient({
    url: typeof target === 'string' ? target : 'http://facade.test/graphql',
    headers,
    retryAttempts: 0,
    ...(typeof target === 'string'
      ? {}
      : { fetchFn: (url: string, init: RequestInit) => target.fetch(url, init) }),
  });
}

/** One subscriber's events, read as they come; `next` waits for the next one (or the end). */
export function subscribe(client: Client, variables: Record<string, unknown>, query = WATCH) {
  const iterator = client.iterate<DnsCheckEvent['data']>({ query, variables });
  const events: DnsCheckEvent[] = [];
  let done = false;
  return {
    events,
    get done() {
      return done;
    },
    async next(): Promise<DnsCheckEvent | undefined> {
      const step = await iterator.next();
      if (step.done) {
        done = true;
        return undefined;
      }
      events.push(step.value as DnsCheckEvent);
      return step.value as DnsCheckEvent;
    },
    /** Reads to the end; the events it read. */
    async rest(): Promise<DnsCheckEvent[]> {
      const read: DnsCheckEvent[] = [];
      for (let event = await this.next(); event; event = await this.next()) read.push(event);
      return read;
    },
    close: async () => {
      await iterator.return?.();
    },
  };
}

/**
 * One subscription POSTed as graphql-sse's client does, read whole: for an answer that is not a
 * stream (a refusal), its status, headers and errors.
 */
export async function postSubscription(
  url: string,
  variables: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ query: WATCH, variables }),
  });
  const text = await response.text();
  // A refusal before the stream is JSON; one inside it, the data of its first event.
  const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '{}');
  const body = JSON.parse(json) as DnsCheckEvent;
  return { status: response.status, headers: response.headers, ...body };
}
