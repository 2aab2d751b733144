import { afterEach, describe, expect, it } from 'vitest';
import { createSubscriptions } from '../../src/security/subscriptions.js';
import { createRateLimiter } from '../../src/security/use-rate-limit.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import type { ConfigOverrides } from '../helpers/harness.js';
import { useDnsHarness } from '../helpers/harness.js';
import { type Listening, listen } from '../helpers/net.js';
import { postSubscription, sseClient, subscribe } from '../helpers/subscriptions.js';

const DOMAIN = 'watch.example.com';
const HOST = `_service_custom_hostname.${DOMAIN}`;
const CODE = 'svc-verify-watch';
const NO_SUCH_NAME = `No such name: ${HOST} does not exist (yet). Publish the TXT record there, then check again.`;

const live = useDnsHarness();

type Limits = Partial<NonNullable<ConfigOverrides['subscriptions']>>;

const served: Listening[] = [];
afterEach(async () => {
  await Promise.all(served.splice(0).map((server) => server.close()));
});

/**
 * The URL of an app on a loopback port (a client that leaves closes its connection, as in a
 * browser), whose watches look up every 200 ms unless `limits` says otherwise.
 */
async function appWith(limits: Limits = {}, parts: Parameters<typeof live.h.createApp>[0] = {}) {
  const app = live.h.createApp({
    ...parts,
    config: { subscriptions: { minIntervalMs: 200, maxIntervalMs: 200, ...limits } },
  });
  const server = await listen(app);
  served.push(server);
  return server.url;
}

describe('Subscription.domainDnsCheck', () => {
  it('answers what DNS says at once, then the match, then completes', async () => {
    live.dns.remove(HOST);
    const watch = subscribe(sseClient(await appWith()), { domain: DOMAIN, code: CODE });
    expect(await watch.next()).toEqual({
      data: { domainDnsCheck: { host: HOST, values: [], matches: false, error: NO_SUCH_NAME } },
    });
    live.dns.setTxt(HOST, [CODE]);
    expect(await watch.next()).toEqual({
      data: { domainDnsCheck: { host: HOST, values: [CODE], matches: true, error: null } },
    });
    expect(await watch.next()).toBeUndefined();
  });

  it('sends an event for each change only, not for each look-up', async () => {
    live.dns.setTxt(HOST, ['svc-verify-old']);
    const watch = subscribe(sseClient(await appWith()), { domain: DOMAIN, code: CODE });
    expect((await watch.next())?.data?.domainDnsCheck).toMatchObject({ matches: false });
    // Several look-ups that find the same record, then a change.
    await expect
      .poll(() => live.dns.queriesFor(HOST).length, { timeout: 5_000 })
      .toBeGreaterThan(3);
    live.dns.setTxt(HOST, ['svc-verify-old', 'v=spf1 -all']);
    const changed = await watch.next();
    expect(changed?.data?.domainDnsCheck.values.sort()).toEqual(['svc-verify-old', 'v=spf1 -all']);
    live.dns.setTxt(HOST, [CODE]);
    expect((await watch.next())?.data?.domainDnsCheck.matches).toBe(true);
    expect(await watch.next()).toBeUndefined();
    expect(watch.events).toHaveLength(3);
  });

  it('ends at the time limit with a last event that says so', async () => {
    live.dns.remove(HOST);
    const watch = subscribe(sseClient(await appWith({ timeLimitS: 1 })), {
      domain: DOMAIN,
      code: CODE,
    });
    const events = await watch.rest();
    expect(events.map((event) => event.data?.domainDnsCheck.error)).toEqual([
      NO_SUCH_NAME,
      `Watch ended: the time limit (1 s) passed. ${NO_SUCH_NAME}`,
    ]);
    expect(events.at(-1)?.data?.domainDnsCheck).toMatchObject({ host: HOST, matches: false });
  });

  it('ends when nothing changed for the idle limit, and says so', async () => {
    live.dns.setTxt(HOST, ['svc-verify-other']);
    const app = await appWith({ idleLimitS: 1, timeLimitS: 60 });
    const events = await subscribe(sseClient(app), { domain: DOMAIN, code: CODE }).rest();
    expect(events.map((event) => event.data?.domainDnsCheck)).toEqual([
      { host: HOST, values: ['svc-verify-other'], matches: false, error: null },
      {
        host: HOST,
        values: ['svc-verify-other'],
        matches: false,
        error: 'Watch ended: nothing changed for 1 s.',
      },
    ]);
  });

  it('backs off while nothing changes', async () => {
    live.dns.remove(HOST);
    const url = await appWith({ minIntervalMs: 200, maxIntervalMs: 1_600 });
    const watch = subscribe(sseClient(url), { domain: DOMAIN, code: CODE });
    await watch.next();
    const started = Date.now();
    const first = live.dns.queriesFor(HOST).length;
    await expect
      .poll(() => live.dns.queriesFor(HOST).length, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(first + 3);
    // 200, 400 and 800 ms apart, where a fixed interval would have asked three times in 600 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    await watch.close();
  });

  it("waits for a found record's TTL before the next look-up", async () => {
    live.dns.set(HOST, { txt: ['svc-verify-other'], ttl: 1 });
    const metrics = createMetrics();
    const url = await appWith({ minIntervalMs: 100, maxIntervalMs: 60_000 }, { metrics });
    const watch = subscribe(sseClient(url), { domain: DOMAIN, code: CODE });
    await watch.next();
    const started = Date.now();
    const lookUps = async () =>
      (await metrics.registry.getSingleMetric('dns_watch_lookups_total')?.get())?.values[0]?.value;
    await expect.poll(lookUps, { timeout: 10_000 }).toBe(2);
    // Not after the 100 ms interval: after the record's 1 s.
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    await watch.close();
  });

  it('refuses an invalid domain with BAD_USER_INPUT before any look-up', async () => {
    const events = await subscribe(sseClient(await appWith()), { domain: 'not a domain' }).rest();
    expect(events).toHaveLength(1);
    expect(events[0]?.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
    expect(live.dns.queries()).toEqual([]);
  });

  it('looks a name up once per interval for ten subscribers', async () => {
    live.dns.remove(HOST);
    const intervalMs = 400;
    const app = await appWith({
      minIntervalMs: intervalMs,
      maxIntervalMs: intervalMs,
      maxPerClient: 10,
    });
    const client = sseClient(app);
    const started = Date.now();
    const watches = Array.from({ length: 10 }, () =>
      subscribe(client, { domain: DOMAIN, code: CODE }),
    );
    await Promise.all(watches.map((watch) => watch.next()));
    // Looked up for a few intervals.
    await expect
      .poll(() => live.dns.queriesFor(HOST).length, { timeout: 10_000 })
      .toBeGreaterThan(4);
    live.dns.setTxt(HOST, [CODE]);
    const last = await Promise.all(watches.map((watch) => watch.rest()));
    const elapsed = Date.now() - started;
    // One look-up at the start, then at most one per interval: alone, each subscriber's would be ten.
    expect(live.dns.queriesFor(HOST).length).toBeLessThanOrEqual(
      Math.floor(elapsed / intervalMs) + 1,
    );
    for (const events of last)
      expect(events.map((e) => e.data?.domainDnsCheck.matches)).toEqual([true]);
  });
});

describe('the bounds of subscriptions', () => {
  const token = (name: string) => ({ authorization: `Bearer ${name}` });

  it('refuses one more than MAX_SUBSCRIPTIONS_PER_CLIENT with RATE_LIMITED and retryAfter', async () => {
    live.dns.remove(HOST);
    const app = await appWith({ maxPerClient: 2 });
    const open = [
      subscribe(sseClient(app, token('a')), { domain: DOMAIN, code: CODE }),
      subscribe(sseClient(app, token('a')), { domain: DOMAIN, code: CODE }),
    ];
    await Promise.all(open.map((watch) => watch.next()));
    const refused = await postSubscription(app, { domain: DOMAIN }, token('a'));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(refused.errors?.[0]?.extensions).toEqual({ code: 'RATE_LIMITED', retryAfter: 10 });
    // A place is free again once a subscription ends.
    await open[0]?.close();
    const again = subscribe(sseClient(app, token('a')), { domain: DOMAIN, code: CODE });
    await expect.poll(async () => (await again.next())?.data?.domainDnsCheck.host).toBe(HOST);
    await Promise.all([open[1]?.close(), again.close()]);
  });

  it('refuses one more than MAX_SUBSCRIPTIONS in the process, whoever asks', async () => {
    live.dns.remove(HOST);
    const app = await appWith({ maxOpen: 2, maxPerClient: 10 });
    const open = ['a', 'b'].map((name) =>
      subscribe(sseClient(app, token(name)), { domain: DOMAIN, code: CODE }),
    );
    await Promise.all(open.map((watch) => watch.next()));
    const refused = await postSubscription(app, { domain: DOMAIN }, token('c'));
    expect(refused.errors?.[0]).toMatchObject({
      message: expect.stringContaining('MAX_SUBSCRIPTIONS'),
      extensions: { code: 'RATE_LIMITED', retryAfter: 10 },
    });
    await Promise.all(open.map((watch) => watch.close()));
  });

  it('takes one rate-limit unit per subscription, however long it lasts', async () => {
    live.dns.remove(HOST);
    const rateLimiter = await createRateLimiter({ points: 2, windowS: 60, redisUrl: undefined });
    const app = await appWith({}, { rateLimiter });
    const first = subscribe(sseClient(app, token('r')), { domain: DOMAIN, code: CODE });
    await first.next();
    // Look-ups go on, and cost the client nothing more.
    const before = live.dns.queriesFor(HOST).length;
    await expect.poll(() => live.dns.queriesFor(HOST).length).toBeGreaterThan(before + 2);
    const second = subscribe(sseClient(app, token('r')), { domain: DOMAIN, code: CODE });
    expect((await second.next())?.data?.domainDnsCheck.host).toBe(HOST);
    const third = await postSubscription(app, { domain: DOMAIN }, token('r'));
    expect(third.status).toBe(429);
    expect(third.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED' });
    await Promise.all([first.close(), second.close()]);
  });

  it('counts open subscriptions and their ends by reason, and logs each end', async () => {
    live.dns.remove(HOST);
    const metrics = createMetrics();
    const lines: Array<Record<string, unknown>> = [];
    const logger = { info: (fields: Record<string, unknown>) => lines.push(fields) };
    const subscriptions = createSubscriptions({
      limits: { maxPerClient: 5, maxOpen: 10 },
      metrics,
      logger: logger as never,
    });
    const app = await appWith({}, { metrics, subscriptions });
    const gauge = async () =>
      (await metrics.registry.getSingleMetric('graphql_subscriptions_active')?.get())?.values[0]
        ?.value;
    const left = subscribe(sseClient(app), { domain: DOMAIN, code: CODE });
    const matched = subscribe(sseClient(app), { domain: DOMAIN, code: CODE });
    await Promise.all([left.next(), matched.next()]);
    expect(await gauge()).toBe(2);
    await left.close();
    await expect.poll(gauge).toBe(1);
    live.dns.setTxt(HOST, [CODE]);
    await matched.rest();
    await expect.poll(gauge).toBe(0);
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'graphql_subscriptions_ended_total{field="domainDnsCheck",reason="cancelled"} 1',
    );
    expect(text).toContain(
      'graphql_subscriptions_ended_total{field="domainDnsCheck",reason="matched"} 1',
    );
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          subscription: 'domainDnsCheck',
          reason: 'cancelled',
          host: HOST,
        }),
        expect.objectContaining({ subscription: 'domainDnsCheck', reason: 'matched', events: 2 }),
      ]),
    );
  });

  it('sends each stream a last event and completes it when the process stops', async () => {
    live.dns.remove(HOST);
    const subscriptions = createSubscriptions({ limits: { maxPerClient: 5, maxOpen: 10 } });
    const app = await appWith({}, { subscriptions });
    const watches = [1, 2].map(() => subscribe(sseClient(app), { domain: DOMAIN, code: CODE }));
    await Promise.all(watches.map((watch) => watch.next()));
    await subscriptions.drain(5_000);
    for (const watch of watches) {
      expect((await watch.rest()).map((event) => event.data?.domainDnsCheck.error)).toEqual([
        `Watch ended: the server is restarting. ${NO_SUCH_NAME}`,
      ]);
    }
    expect(subscriptions.active).toBe(0);
    // A stopping process takes no new one.
    const late = await postSubscription(app, { domain: DOMAIN });
    expect(late.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED' });
  });
});

describe('the request rules, for subscriptions as for queries', () => {
  it('refuses a cross-site subscription, and looks nothing up', async () => {
    const url = await appWith();
    const refused = await postSubscription(
      url,
      { domain: DOMAIN, code: CODE },
      {
        origin: 'https://evil.example',
        'sec-fetch-site': 'cross-site',
        'sec-fetch-mode': 'cors',
        'sec-fetch-dest': 'empty',
      },
    );
    expect(refused.status).toBe(403);
    expect(live.dns.queries()).toEqual([]);
  });

  it('takes only accepted client tokens in service-key mode', async () => {
    live.dns.remove(HOST);
    const app = live.h.createApp({
      config: {
        upstream: { apiKey: 'facade-service-key' },
        clientTokens: ['client-token-a'],
        subscriptions: { minIntervalMs: 200, maxIntervalMs: 200 },
      },
    });
    const server = await listen(app);
    served.push(server);
    const refused = await postSubscription(
      server.url,
      { domain: DOMAIN },
      {
        authorization: 'Bearer not-a-client',
      },
    );
    expect(refused.status).toBe(401);
    expect(live.dns.queries()).toEqual([]);
    const watch = subscribe(sseClient(server.url, { authorization: 'Bearer client-token-a' }), {
      domain: DOMAIN,
      code: CODE,
    });
    expect((await watch.next())?.data?.domainDnsCheck.host).toBe(HOST);
    await watch.close();
  });
});
