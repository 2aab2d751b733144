import { describe, expect, it } from 'vitest';
import { asksForMultipartSubscription } from '../../src/http/use-multipart-subscriptions.js';
import { createSubscriptions } from '../../src/security/subscriptions.js';
import { useDnsHarness } from '../helpers/harness.js';
import { WATCH } from '../helpers/subscriptions.js';

const DOMAIN = 'multipart.example.com';
const HOST = `_service_custom_hostname.${DOMAIN}`;
const CODE = 'svc-verify-multipart';
/** What Apollo Client's HttpLink sends for a subscription, by default. */
const APOLLO_ACCEPT = 'multipart/mixed;boundary=graphql;subscriptionSpec=1.0,application/json';

const live = useDnsHarness();

const DELIMITER = '\r\n--graphql';

/**
 * The JSON of each part of Apollo's multipart protocol, read as Apollo Client reads it: a part is
 * whole once the delimiter after it has come; 'closed' for the closing delimiter.
 */
async function* parts(response: Response): AsyncGenerator<unknown> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    for (let end = buffer.indexOf(DELIMITER); end !== -1; end = buffer.indexOf(DELIMITER)) {
      const part = buffer.slice(0, end);
      buffer = buffer.slice(end + DELIMITER.length);
      if (part.includes('\r\n\r\n')) yield JSON.parse(part.slice(part.indexOf('\r\n\r\n') + 4));
    }
    if (buffer.startsWith('--')) {
      yield 'closed';
      return;
    }
  }
}

type App = { fetch: (url: string, init: RequestInit) => Promise<Response> | Response };

async function post(app: App, variables: Record<string, unknown>, accept: string) {
  return app.fetch('http://facade.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify({ query: WATCH, variables }),
  });
}

describe('subscriptions over multipart HTTP (subscriptionSpec 1.0)', () => {
  it("answers Apollo Client's Accept in Apollo's parts, then closes", async () => {
    live.dns.remove(HOST);
    const app = live.h.createApp({
      config: { subscriptions: { minIntervalMs: 200, maxIntervalMs: 200 } },
    });
    const response = await post(app, { domain: DOMAIN, code: CODE }, APOLLO_ACCEPT);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(
      'multipart/mixed;boundary="graphql";subscriptionSpec="1.0"',
    );
    const read = parts(response);
    // A heartbeat opens the stream.
    expect((await read.next()).value).toEqual({});
    expect((await read.next()).value).toEqual({
      payload: {
        data: {
          domainDnsCheck: {
            host: HOST,
            values: [],
            matches: false,
            error: expect.stringMatching(/^No such name/),
          },
        },
      },
    });
    live.dns.setTxt(HOST, [CODE]);
    let next = (await read.next()).value;
    while (JSON.stringify(next) === '{}') next = (await read.next()).value;
    expect(next).toEqual({
      payload: {
        data: { domainDnsCheck: { host: HOST, values: [CODE], matches: true, error: null } },
      },
    });
    expect((await read.next()).value).toBe('closed');
  });

  it('sends heartbeats while nothing changes', async () => {
    live.dns.remove(HOST);
    const app = live.h.createApp({
      config: { subscriptions: { minIntervalMs: 60_000, maxIntervalMs: 60_000 } },
    });
    const response = await post(app, { domain: DOMAIN, code: CODE }, APOLLO_ACCEPT);
    const read = parts(response);
    await read.next();
    await read.next();
    // The next part, with no change in DNS for a minute, can only be a heartbeat.
    expect((await read.next()).value).toEqual({});
    await read.return(undefined);
  }, 15_000);

  it('leaves @defer to Yoga, and a subscription asked as an event stream to graphql-sse', async () => {
    expect(asksForMultipartSubscription('multipart/mixed;deferSpec=20220824')).toBe(false);
    expect(asksForMultipartSubscription('multipart/mixed;subscriptionSpec="1.0"')).toBe(true);
    expect(asksForMultipartSubscription(APOLLO_ACCEPT)).toBe(true);
    live.dns.remove(HOST);
    const response = await post(live.h.app, { domain: DOMAIN }, 'text/event-stream');
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await reader.cancel();
  });

  it('refuses an invalid domain in JSON, which Apollo Client reads as errors', async () => {
    const response = await post(live.h.app, { domain: 'not a domain' }, APOLLO_ACCEPT);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await response.json()) as { errors: Array<{ extensions: { code: string } }> };
    expect(body.errors[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(live.dns.queries()).toEqual([]);
  });

  it('frees the place of a subscription its client leaves before reading an event', async () => {
    live.dns.remove(HOST);
    const subscriptions = createSubscriptions({ limits: { maxPerClient: 5, maxOpen: 10 } });
    const app = live.h.createApp({ subscriptions });
    const response = await post(app, { domain: DOMAIN, code: CODE }, APOLLO_ACCEPT);
    expect(subscriptions.active).toBe(1);
    await response.body?.cancel();
    await expect.poll(() => subscriptions.active).toBe(0);
  });
});
