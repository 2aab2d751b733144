import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { createApp } from '../../src/app.js';
import { connectRedis } from '../../src/redis.js';
import {
  addressKey,
  clientKeys,
  createRateLimiter,
  type RateLimiter,
} from '../../src/security/use-rate-limit.js';
import {
  type ConfigOverrides,
  postGraphQL,
  upstreamRequests,
  useHarness,
} from '../helpers/harness.js';
import { freePort, listen, waitForPort } from '../helpers/net.js';
import { post } from '../helpers/process.js';
import { hasRedis, startRedis, stopRedis } from '../helpers/redis.js';

const QUERY = '{ repositories(limit: 1) { total } }';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** POSTs `body`, one operation or a batch of them, as the caller "batcher". */
const sendAsBatcher = (app: ReturnType<typeof createApp>, body: unknown) =>
  app.fetch('http://facade.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer('batcher') },
    body: JSON.stringify(body),
  });

describe('rate limits, in memory', () => {
  const h = useHarness();
  let limiter: RateLimiter;
  const appWith = (config: ConfigOverrides = {}) => h.createApp({ config, rateLimiter: limiter });

  beforeEach(async () => {
    limiter = (await createRateLimiter({
      points: 3,
      windowS: 60,
      redisUrl: undefined,
    })) as RateLimiter;
  });

  it('answers RATE_LIMITED with retryAfter, 429 and Retry-After past the budget', async () => {
    const app = appWith({ rateLimit: { trustProxy: true } });
    const as = (token: string, ip: string) => ({ ...bearer(token), 'x-forwarded-for': ip });
    for (let i = 0; i < 3; i++) {
      const ok = await postGraphQL(app, QUERY, {}, as('alice', '192.0.2.10'));
      expect(ok.errors).toBeUndefined();
    }
    h.sandbox.clearRequests();
    const refused = await postGraphQL(app, QUERY, {}, as('alice', '192.0.2.10'));
    expect(refused.status).toBe(429);
    expect(refused.errors?.[0]?.extensions.code).toBe('RATE_LIMITED');
    const retryAfter = refused.errors?.[0]?.extensions.retryAfter;
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.errors?.[0]?.message).toBe(`Too many requests; retry in ${retryAfter} s`);
    expect(refused.headers.get('retry-after')).toBe(String(retryAfter));
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);

    // Another client's budget is its own.
    const bob = await postGraphQL(app, QUERY, {}, as('bob', '192.0.2.11'));
    expect(bob.errors).toBeUndefined();
  });

  it('states its budgets in RateLimit and RateLimit-Policy on every answer it counts, 429 too', async () => {
    limiter = (await createRateLimiter({
      points: 3,
      addressPoints: 5,
      windowS: 60,
      redisUrl: undefined,
    })) as RateLimiter;
    const app = appWith({ rateLimit: { trustProxy: true } });
    const send = () =>
      postGraphQL(app, QUERY, {}, { ...bearer('alice'), 'x-forwarded-for': '192.0.2.20' });
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const ok = await send();
      expect(ok.status).toBe(200);
      expect(ok.headers.get('ratelimit-policy')).toBe('"client";q=3;w=60, "address";q=5;w=60');
      remaining.push(ok.headers.get('ratelimit') ?? '');
    }
    expect(remaining.map((field) => field.replace(/;t=\d+/g, ''))).toEqual([
      '"client";r=2, "address";r=4',
      '"client";r=1, "address";r=3',
      '"client";r=0, "address";r=2',
    ]);
    expect(remaining[0]).toMatch(/^"client";r=2;t=(59|60), "address";r=4;t=(59|60)$/);
    const refused = await send();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-policy')).toBe('"client";q=3;w=60, "address";q=5;w=60');
    expect(refused.headers.get('ratelimit')).toMatch(/^"client";r=0;t=\d+, "address";r=1;t=\d+$/);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    // Not counted, not stated: the health probe does not pass the rate limit.
    const health = await app.fetch('http://facade.test/health');
    expect(health.headers.has('ratelimit')).toBe(false);
  });

  it('holds an address to its ceiling whatever tokens it invents', async () => {
    const app = appWith();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      statuses.push((await postGraphQL(app, QUERY, {}, bearer(`invented-${i}`))).status);
    }
    expect(statuses).toEqual([200, 200, 200, ...Array(7).fill(429)]);
    expect(upstreamRequests(h.sandbox)).toHaveLength(3);
  });

  it('gives tokens from one address their own budgets up to RATE_LIMIT_ADDRESS_POINTS', async () => {
    const wide = (await createRateLimiter({
      points: 2,
      addressPoints: 5,
      windowS: 60,
      redisUrl: undefined,
    })) as RateLimiter;
    const app = h.createApp({ rateLimiter: wide });
    const send = (token: string) => postGraphQL(app, QUERY, {}, bearer(token));
    const statuses: number[] = [];
    for (const token of ['a', 'a', 'a', 'b', 'b', 'c', 'c'])
      statuses.push((await send(token)).status);
    // a: 2, then its own budget is spent; every attempt counts against the address's 5, so after
    // b's 2 the address is spent too, and c, with a fresh budget of its own, is refused.
    expect(statuses).toEqual([200, 200, 429, 200, 200, 429, 429]);
  });

  it('counts callers without a token by address (X-Forwarded-For only with TRUST_PROXY)', async () => {
    const app = appWith({ rateLimit: { trustProxy: true } });
    const from = (ip: string) =>
      postGraphQL(app, QUERY, {}, { 'x-forwarded-for': `10.0.0.9, ${ip}` });
    for (let i = 0; i < 3; i++) expect((await from('192.0.2.1')).status).toBe(200);
    expect((await from('192.0.2.1')).status).toBe(429);
    expect((await from('192.0.2.2')).status).toBe(200);
  });

  it('ignores X-Forwarded-For without TRUST_PROXY, so rotating it dodges nothing', async () => {
    const app = appWith();
    const statuses: number[] = [];
    for (let i = 1; i <= 5; i++) {
      const headers = { 'x-forwarded-for': `192.0.2.${i}` };
      statuses.push((await postGraphQL(app, QUERY, {}, headers)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it('counts an IPv6 /64 as one however its address is written (case, leading zeros, ::)', async () => {
    const app = appWith({ rateLimit: { trustProxy: true } });
    const statuses: number[] = [];
    for (const address of [
      '2001:db8:7:9::1',
      '2001:0db8:0007:0009::2',
      '2001:0DB8:7:9:0:0:0:3',
      '2001:db8:0007:9:ffff::4',
    ])
      statuses.push((await postGraphQL(app, QUERY, {}, { 'x-forwarded-for': address })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('holds an IPv6 /64 to one ceiling, whichever of its addresses each request comes from', async () => {
    const app = appWith({ rateLimit: { trustProxy: true } });
    const statuses: number[] = [];
    for (let i = 1; i <= 5; i++) {
      const headers = { ...bearer(`invented-${i}`), 'x-forwarded-for': `2001:db8:7:9::${i}` };
      statuses.push((await postGraphQL(app, QUERY, {}, headers)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const neighbour = { 'x-forwarded-for': '2001:db8:7:a::1' };
    expect((await postGraphQL(app, QUERY, {}, neighbour)).status).toBe(200);
  });

  it('counts an IPv4 address as one, also when IPv4-mapped or with a port', async () => {
    const app = appWith({ rateLimit: { trustProxy: true } });
    const statuses: number[] = [];
    for (const address of ['192.0.2.5', '::ffff:192.0.2.5', '192.0.2.5:41234', '::FFFF:192.0.2.5'])
      statuses.push((await postGraphQL(app, QUERY, {}, { 'x-forwarded-for': address })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('ignores a forwarded entry that is not an address, so a client cannot name itself anew', async () => {
    const app = appWith({ rateLimit: { trustProxy: true } });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const headers = { ...bearer(`invented-${i}`), 'x-forwarded-for': `not-an-address-${i}` };
      statuses.push((await postGraphQL(app, QUERY, {}, headers)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it("uses the socket's address behind node:http", async () => {
    const server = await listen(appWith());
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await post(server.url, QUERY)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await server.close();
    }
  });

  it('counts unaccepted tokens by address in service-key mode, so guessing is limited', async () => {
    const app = appWith({
      upstream: { apiKey: 'facade-key' },
      clientTokens: ['good-token'],
      rateLimit: { trustProxy: true },
    });
    const guess = (token: string) =>
      postGraphQL(app, QUERY, {}, { ...bearer(token), 'x-forwarded-for': '198.51.100.7' });
    const statuses: number[] = [];
    for (const token of ['g1', 'g2', 'g3', 'g4']) statuses.push((await guess(token)).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await postGraphQL(app, QUERY, {}, bearer('good-token'))).status).toBe(200);
  });

  it('charges a batch one point per operation', async () => {
    const app = appWith({ limits: { batchingLimit: 5 } });
    const batch = (n: number) =>
      sendAsBatcher(
        app,
        Array.from({ length: n }, () => ({ query: QUERY })),
      );
    expect((await batch(3)).status).toBe(200);
    expect((await batch(1)).status).toBe(429);
  });

  it('charges a batch of two operations two points', async () => {
    const app = appWith({ limits: { batchingLimit: 5 } });
    const send = (body: unknown) => sendAsBatcher(app, body);
    expect((await send([{ query: QUERY }, { query: QUERY }])).status).toBe(200);
    expect((await send({ query: QUERY })).status).toBe(200);
    expect((await send({ query: QUERY })).status).toBe(429);
  });

  it('charges a batch as long as BATCHING_LIMIT one point per operation', async () => {
    const app = appWith({ limits: { batchingLimit: 2 } });
    const send = (body: unknown) => sendAsBatcher(app, body);
    const batch = await send([{ query: QUERY }, { query: QUERY }]);
    expect(batch.status).toBe(200);
    expect(batch.headers.get('ratelimit')).toMatch(/^"client";r=1;/);
    expect((await send({ query: QUERY })).status).toBe(200);
    expect((await send({ query: QUERY })).status).toBe(429);
  });

  it('charges nothing for the operations of a batch past BATCHING_LIMIT, which is refused', async () => {
    for (const batchingLimit of [2, 0]) {
      limiter = (await createRateLimiter({
        points: 3,
        windowS: 60,
        redisUrl: undefined,
      })) as RateLimiter;
      const app = appWith({ limits: { batchingLimit } });
      const send = (body: unknown) => sendAsBatcher(app, body);
      const refused = await send(Array.from({ length: 5 }, () => ({ query: QUERY })));
      expect(refused.status).toBe(batchingLimit === 0 ? 400 : 413);
      // The refused request took its one point; the two left answer.
      expect(refused.headers.get('ratelimit')).toMatch(/^"client";r=2;/);
      expect((await send({ query: QUERY })).status).toBe(200);
      expect((await send({ query: QUERY })).status).toBe(200);
      expect((await send({ query: QUERY })).status).toBe(429);
    }
  });

  it('states a reset no sooner than the Retry-After beside it', async () => {
    limiter = (await createRateLimiter({
      points: 1,
      windowS: 5,
      redisUrl: undefined,
    })) as RateLimiter;
    const app = appWith();
    expect((await postGraphQL(app, QUERY, {}, bearer('quick'))).status).toBe(200);
    // Into the window, so that what is left of it is not whole seconds.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const refused = await postGraphQL(app, QUERY, {}, bearer('quick'));
    expect(refused.status).toBe(429);
    const wait = refused.headers.get('retry-after');
    expect(wait).toMatch(/^[1-5]$/);
    expect(refused.headers.get('ratelimit')).toBe(
      `"client";r=0;t=${wait}, "address";r=0;t=${wait}`,
    );
  });

  it('answers the wait until the window ends, in whole seconds', async () => {
    const one = (await createRateLimiter({
      points: 1,
      windowS: 60,
      redisUrl: undefined,
    })) as RateLimiter;
    expect((await one.consume('t:x')).retryAfter).toBeUndefined();
    const refused = await one.consume('t:x');
    expect(refused.retryAfter).toBe(60);
    // What the store said, for headers that report the budget.
    expect(refused.res?.remainingPoints).toBe(0);
    expect(refused.res?.msBeforeNext).toBeGreaterThan(59_000);
  });

  it('holds no address to a ceiling with RATE_LIMIT_ADDRESS_POINTS=0', async () => {
    const open = (await createRateLimiter({
      points: 1,
      addressPoints: 0,
      windowS: 60,
      redisUrl: undefined,
    })) as RateLimiter;
    const waits = [];
    for (let i = 0; i < 3; i++) waits.push((await open.consumeAddress('192.0.2.1')).retryAfter);
    expect(waits).toEqual([undefined, undefined, undefined]);
    // Nor states one.
    limiter = open;
    const answer = await postGraphQL(appWith(), QUERY, {}, bearer('open'));
    expect(answer.headers.get('ratelimit-policy')).toBe('"client";q=1;w=60');
    expect(answer.headers.get('ratelimit')).toMatch(/^"client";r=0;t=\d+$/);
  });

  it('falls back to memory counters while Redis is unreachable', async () => {
    const port = await freePort();
    const fallback = await createRateLimiter({
      points: 2,
      windowS: 60,
      redisUrl: `redis://127.0.0.1:${port}`,
    });
    try {
      expect(fallback?.store).toBe('redis');
      expect(await fallback?.ready(200)).toBe(false);
      const waits = [];
      for (let i = 0; i < 3; i++) waits.push((await fallback?.consume('t:x'))?.retryAfter);
      expect(waits.slice(0, 2)).toEqual([undefined, undefined]);
      expect(waits[2]).toBeGreaterThanOrEqual(1);
    } finally {
      await fallback?.close();
    }
  });

  it('is off with RATE_LIMIT_POINTS=0', async () => {
    expect(
      await createRateLimiter({ points: 0, windowS: 60, redisUrl: undefined }),
    ).toBeUndefined();
  });
});

describe('addressKey', () => {
  it.each([
    ['192.0.2.5', '192.0.2.5'],
    [' 192.0.2.5 ', '192.0.2.5'],
    ['10.20.30.40:8080', '10.20.30.40'],
    ['::ffff:10.20.30.40', '10.20.30.40'],
    ['::FFFF:192.0.2.5', '192.0.2.5'],
    ['[2001:db8::1]:443', '2001:db8:0:0::/64'],
    ['2001:DB8:0007:0009:1:2:3:4', '2001:db8:7:9::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['1::', '1:0:0:0::/64'],
    ['1::2', '1:0:0:0::/64'],
    ['1::2:3:4:5:6:7', '1:0:2:3::/64'],
    // A trailing dotted quad is two groups.
    ['1::2:3:4:5:10.20.30.40', '1:0:2:3::/64'],
    ['1::ffff:10.20.30.40', '1:0:0:0::/64'],
  ])('counts %s as %s', (raw, key) => {
    expect(addressKey(raw)).toBe(key);
  });

  it.each([
    undefined,
    '',
    'unknown',
    'not-an-address',
    'x192.0.2.5:80',
    '192.0.2.5:80x',
    '192.0.2.5:123456',
    '[::1]',
    '::ffff:1.2.3.4.5',
  ])('has no key for %s', (raw) => {
    expect(addressKey(raw)).toBeUndefined();
  });
});

describe('clientKeys', () => {
  const request = (headers: Record<string, string> = {}) =>
    new Request('http://facade.test/graphql', { headers });
  const socket = (remoteAddress: string) => ({ req: { socket: { remoteAddress } } });

  it("counts a caller without a token by the socket's address, or as unknown without one", () => {
    expect(clientKeys(request(), socket('192.0.2.1'), { trustProxy: false })).toEqual({
      client: 'ip:192.0.2.1',
      address: '192.0.2.1',
    });
    expect(clientKeys(request(), undefined, { trustProxy: false })).toEqual({
      client: 'ip:unknown',
      address: 'unknown',
    });
  });

  it("takes the last X-Forwarded-For entry with TRUST_PROXY, else the socket's", () => {
    const forwarded = request({ 'x-forwarded-for': '198.51.100.1, 192.0.2.9' });
    expect(clientKeys(forwarded, socket('10.0.0.1'), { trustProxy: true }).client).toBe(
      'ip:192.0.2.9',
    );
    const invalid = request({ 'x-forwarded-for': 'spoofed' });
    expect(clientKeys(invalid, socket('10.0.0.1'), { trustProxy: true }).client).toBe(
      'ip:10.0.0.1',
    );
  });

  it('counts an accepted token on its own, and any other by address too', () => {
    const withToken = request({ authorization: 'Bearer good' });
    const forwarding = clientKeys(withToken, socket('192.0.2.1'), { trustProxy: false });
    expect(forwarding.client).toMatch(/^t:/);
    expect(forwarding.address).toBe('192.0.2.1');
    const isAccepted = (token: string | undefined) => token === 'good';
    const verified = clientKeys(withToken, socket('192.0.2.1'), { trustProxy: false, isAccepted });
    expect(verified).toEqual({ client: forwarding.client, address: undefined });
    const guessed = request({ authorization: 'Bearer guess' });
    expect(clientKeys(guessed, socket('192.0.2.1'), { trustProxy: false, isAccepted })).toEqual({
      client: 'ip:192.0.2.1',
      address: '192.0.2.1',
    });
  });
});

describe.skipIf(!hasRedis)('rate limits, in Redis', () => {
  let redis: ChildProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    await waitForPort(port);
    url = `redis://127.0.0.1:${port}`;
  });
  afterAll(() => {
    redis?.kill();
  });

  it('is ready once its own connection is, and closes that connection', async () => {
    const limiter = (await createRateLimiter({
      points: 1,
      windowS: 60,
      redisUrl: url,
    })) as RateLimiter;
    expect(await limiter.ready(5_000)).toBe(true);
    // Already connected: answered at once.
    expect(await limiter.ready(50)).toBe(true);
    expect((await limiter.consume('t:redis')).retryAfter).toBeUndefined();
    expect((await limiter.consume('t:redis')).retryAfter).toBe(60);
    await limiter.close();
    // The connection ends with its socket's close, a moment after disconnect().
    await vi.waitFor(async () => expect(await limiter.ready(10)).toBe(false));
  });

  it('counts in Redis: one budget for every limiter on it', async () => {
    const limiters = await Promise.all(
      [1, 2].map(
        async () =>
          (await createRateLimiter({ points: 1, windowS: 60, redisUrl: url })) as RateLimiter,
      ),
    );
    try {
      for (const limiter of limiters) expect(await limiter.ready(5_000)).toBe(true);
      expect((await limiters[0]?.consume('t:shared'))?.retryAfter).toBeUndefined();
      expect((await limiters[1]?.consume('t:shared'))?.retryAfter).toBe(60);
    } finally {
      await Promise.all(limiters.map((limiter) => limiter.close()));
    }
  });

  it('counts in memory while Redis refuses its writes', async () => {
    const full = await startRedis(['--maxmemory', '1']);
    const limiter = (await createRateLimiter({
      points: 2,
      windowS: 60,
      redisUrl: full.url,
    })) as RateLimiter;
    try {
      expect(await limiter.ready(5_000)).toBe(true);
      const waits = [];
      for (let i = 0; i < 3; i++) waits.push((await limiter.consume('t:full')).retryAfter);
      expect(waits).toEqual([undefined, undefined, 60]);
    } finally {
      await limiter.close();
      await stopRedis(full.process);
    }
  });

  it('leaves a shared connection open for its owner to close', async () => {
    const shared = await connectRedis(url, { timeoutMs: 2_000 });
    try {
      const limiter = (await createRateLimiter(
        { points: 1, windowS: 60, redisUrl: url },
        undefined,
        false,
        shared,
      )) as RateLimiter;
      expect(await limiter.ready(5_000)).toBe(true);
      await limiter.close();
      expect(await shared.client.ping()).toBe('PONG');
      expect(shared.client.status).toBe('ready');
      expect(await limiter.ready(50)).toBe(true);
    } finally {
      shared.disconnect();
    }
  });
});
