import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Fault } from '../../sandbox/server.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import type { CompletedCall } from '../../src/upstream/client.js';
import { createHarness, upstreamRequests, useHarness } from '../helpers/harness.js';
import { freePort, type Listening, listen } from '../helpers/net.js';

const LIST = '{ repositories(limit: 3) { total items { id } } }';
const ROUTE = 'GET /git/v1/repo';
const TIMEOUT_MS = 400;

async function timed<T>(run: () => Promise<T>) {
  const started = performance.now();
  const result = await run();
  return { result, ms: performance.now() - started };
}

describe('upstream faults', () => {
  const h = useHarness({
    config: {
      upstream: {
        timeoutMs: TIMEOUT_MS,
        maxResponseBytes: 64 * 1024,
        retries: 0,
        breakerThreshold: 0,
      },
    },
  });

  const cases: Array<[string, Fault, string]> = [
    ['a delay past the deadline', { delayMs: 3_000 }, 'UPSTREAM_TIMEOUT'],
    ['a body that is not JSON', { notJson: true }, 'UPSTREAM_BAD_RESPONSE'],
    ['a body cut off mid-way', { truncate: true }, 'UPSTREAM_BAD_RESPONSE'],
    ['a connection reset', { reset: true }, 'UPSTREAM_UNAVAILABLE'],
    ['an oversized body', { oversizeBytes: 1024 * 1024 }, 'UPSTREAM_BAD_RESPONSE'],
  ];
  for (const [what, fault, code] of cases) {
    it(`answers ${what} with ${code} in time, and recovers`, async () => {
      h.sandbox.setFault(ROUTE, fault);
      const { result, ms } = await timed(() => h.gql(LIST));
      expect(result.errors?.[0]?.extensions.code).toBe(code);
      expect(result.errors?.[0]?.extensions.upstream).toMatchObject({
        message: expect.any(String),
      });
      expect(ms).toBeLessThan(TIMEOUT_MS + 1_000);
      h.sandbox.clearFaults();
      const next = await h.gql(LIST);
      expect(next.errors).toBeUndefined();
    });
  }

  it('answers a closed port with UPSTREAM_UNAVAILABLE in time', async () => {
    const port = await freePort();
    // A deadline far past the bound below: the refusal is answered at once, and on a busy machine
    // it must not lose a race against the deadline and read as a timeout.
    const broken = await createHarness({
      upstreamUrl: `http://127.0.0.1:${port}`,
      config: { upstream: { timeoutMs: 10 * TIMEOUT_MS } },
    });
    try {
      const { result, ms } = await timed(() => broken.gql(LIST));
      expect(result.errors?.[0]?.extensions).toEqual({
        code: 'UPSTREAM_UNAVAILABLE',
        upstream: { message: 'The upstream could not be reached (ECONNREFUSED)' },
      });
      expect(ms).toBeLessThan(TIMEOUT_MS + 1_000);
    } finally {
      await broken.close();
    }
  });
});

describe('retries', () => {
  const h = useHarness({
    config: { upstream: { timeoutMs: 1_500, retries: 2, breakerThreshold: 0 } },
  });

  it('retries a read after 502, 503, 504 and a reset, then succeeds', async () => {
    for (const fault of [
      { status: 502 },
      { status: 503 },
      { status: 504 },
      { reset: true },
    ] as Fault[]) {
      h.sandbox.clearRequests();
      h.sandbox.setFault(ROUTE, { ...fault, times: 2 });
      const result = await h.gql(LIST);
      expect(result.errors).toBeUndefined();
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(3);
    }
  });

  it('gives up after the configured number of retries', async () => {
    h.sandbox.setFault(ROUTE, { status: 503, body: { message: 'down' } });
    const result = await h.gql(LIST);
    expect(result.errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(3);
  });

  it('retries neither a 500 nor a 4xx', async () => {
    h.sandbox.setFault(ROUTE, { status: 500, body: { message: 'bug' }, times: 1 });
    expect((await h.gql(LIST)).errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
    h.sandbox.setFault(ROUTE, { status: 400, body: { message: 'bad' }, times: 1 });
    expect((await h.gql(LIST)).errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(2);
  });

  it('honours Retry-After, but never past the deadline', async () => {
    h.sandbox.setFault(ROUTE, {
      status: 429,
      headers: { 'retry-after': '1' },
      body: { message: 'later' },
      times: 1,
    });
    const waited = await timed(() => h.gql(LIST));
    expect(waited.result.errors).toBeUndefined();
    expect(waited.ms).toBeGreaterThanOrEqual(950);

    h.sandbox.setFault(ROUTE, {
      status: 429,
      headers: { 'retry-after': '30' },
      body: { message: 'much later' },
      times: 1,
    });
    const refused = await timed(() => h.gql(LIST));
    expect(refused.result.errors?.[0]?.extensions).toMatchObject({
      code: 'RATE_LIMITED',
      retryAfter: 30,
    });
    expect(refused.ms).toBeLessThan(1_500);
  });

  it('never retries a POST or a PUT', async () => {
    h.sandbox.setFault('POST /ephemeral/v1/dev-servers', {
      status: 503,
      body: { response: 'busy' },
      times: 1,
    });
    const dev = await h.gql('mutation { requestDevServer(input: {}) { isNew } }');
    expect(dev.errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
    h.sandbox.setFault('PUT /domains/v1/verifications', { reset: true, times: 1 });
    const verify = await h.gql(
      'mutation { verifyDomain(input: { domain: "example.com" }) { verified } }',
    );
    expect(verify.errors?.[0]?.extensions.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(upstreamRequests(h.sandbox, 'POST /ephemeral/v1/dev-servers')).toHaveLength(1);
    expect(upstreamRequests(h.sandbox, 'PUT /domains/v1/verifications')).toHaveLength(1);
  });
});

describe('circuit breaker', () => {
  it('fails fast while the upstream keeps failing, then recovers by itself', async () => {
    const cooldownMs = 60_000;
    const h = await createHarness({
      config: { upstream: { retries: 0, breakerThreshold: 3, breakerCooldownMs: cooldownMs } },
    });
    try {
      h.sandbox.setFault(ROUTE, { status: 503, body: { message: 'down' } });
      for (let i = 0; i < 3; i++)
        expect((await h.gql(LIST)).errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
      const open = await h.gql(LIST);
      expect(open.errors?.[0]?.extensions.code).toBe('UPSTREAM_UNAVAILABLE');
      expect(open.errors?.[0]?.message).toContain('paused');
      h.sandbox.clearFaults();
      expect((await h.gql(LIST)).errors?.[0]?.message).toContain('paused');
      expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(3);

      // cockatiel times the cooldown with Date.now(): moved past it, the next call is the trial
      // that closes the circuit, with no wait and no race against a short cooldown.
      const now = Date.now.bind(Date);
      const clock = vi.spyOn(Date, 'now').mockImplementation(() => now() + cooldownMs);
      try {
        expect((await h.gql(LIST)).errors).toBeUndefined();
        expect((await h.gql(LIST)).errors).toBeUndefined();
      } finally {
        clock.mockRestore();
      }
    } finally {
      await h.close();
    }
  });

  it("opens one route's circuit and leaves the other routes answering", async () => {
    const DEV_SERVERS = 'POST /ephemeral/v1/dev-servers';
    const REQUEST = 'mutation { requestDevServer(input: { repoId: "r" }) { isNew } }';
    const metrics = createMetrics();
    // The default threshold, so the test fails as the product would.
    const h = await createHarness({
      config: { upstream: { breakerCooldownMs: 60_000 } },
      metrics,
      onBreakerChange: (state, route) => metrics.observeBreaker(state, route),
    });
    try {
      h.sandbox.setFault(DEV_SERVERS, { status: 503 });
      for (let i = 0; i < h.config.upstream.breakerThreshold; i++)
        expect((await h.gql(REQUEST)).errors?.[0]?.extensions.code).toBe('UPSTREAM_ERROR');
      const open = await h.gql(REQUEST);
      expect(open.errors?.[0]?.message).toContain('paused');
      expect(upstreamRequests(h.sandbox, DEV_SERVERS)).toHaveLength(
        h.config.upstream.breakerThreshold,
      );

      const list = await h.gql<{ repositories: { total: number } }>(LIST);
      expect(list.errors).toBeUndefined();
      expect(list.data?.repositories.total).toBeGreaterThan(0);
      const text = await (await h.app.fetch('http://facade.test/metrics')).text();
      expect(text).toMatch(
        /^upstream_breaker_state\{route="POST \/ephemeral\/v1\/dev-servers"\} 1$/m,
      );
      expect(text).not.toMatch(/upstream_breaker_state\{route="GET/);
    } finally {
      await h.close();
    }
  });
});

/** A list query over real HTTP whose client can go away mid-request; abandon() says how it ended. */
function abandonable(url: string) {
  const abort = new AbortController();
  const pending = fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: LIST }),
    signal: abort.signal,
  }).then(
    () => 'answered',
    () => 'aborted',
  );
  return {
    abandon() {
      abort.abort();
      return pending;
    },
  };
}

describe('cancellation', () => {
  const calls: CompletedCall[] = [];
  const h = useHarness({ onCall: (call) => calls.push(call) });
  let server: Listening;
  beforeAll(async () => {
    server = await listen(h.app);
  });
  afterAll(() => server.close());

  it('aborts the upstream read of a client that goes away', async () => {
    h.sandbox.setFault(ROUTE, { delayMs: 5_000, times: 1 });
    const request = abandonable(server.url);
    await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(1);
    expect(await request.abandon()).toBe('aborted');
    await expect.poll(() => calls.length, { timeout: 2_000 }).toBe(1);
    expect(calls[0]?.outcome).toBe('cancelled');
    expect(calls[0]?.durationMs).toBeLessThan(2_000);
  });
});

describe('circuit breaker on transport failures', () => {
  const THRESHOLD = 3;
  const breakerConfig = {
    upstream: {
      retries: 0,
      // No call here is meant to succeed: the timeouts that open the circuit are all it waits for.
      timeoutMs: 150,
      breakerThreshold: THRESHOLD,
      breakerCooldownMs: 60_000,
    },
  };

  it('opens after BREAKER_THRESHOLD refused connections and then makes no attempt', async () => {
    const attempts: CompletedCall[] = [];
    const port = await freePort();
    const broken = await createHarness({
      upstreamUrl: `http://127.0.0.1:${port}`,
      config: breakerConfig,
      onCall: (call) => attempts.push(call),
    });
    try {
      for (let i = 0; i < THRESHOLD; i++)
        expect((await broken.gql(LIST)).errors?.[0]?.extensions.code).toBe('UPSTREAM_UNAVAILABLE');
      expect(attempts).toHaveLength(THRESHOLD);
      for (let i = 0; i < 3; i++) {
        const open = await broken.gql(LIST);
        expect(open.errors?.[0]?.extensions.code).toBe('UPSTREAM_UNAVAILABLE');
        expect(open.errors?.[0]?.message).toContain('paused');
      }
      expect(attempts).toHaveLength(THRESHOLD);
    } finally {
      await broken.close();
    }
  });

  const faults: Array<[string, Fault, string]> = [
    ['timeouts', { delayMs: 3_000 }, 'UPSTREAM_TIMEOUT'],
    ['connection resets', { reset: true }, 'UPSTREAM_UNAVAILABLE'],
  ];
  for (const [what, fault, code] of faults) {
    it(`opens after BREAKER_THRESHOLD ${what}`, async () => {
      const h = await createHarness({ config: breakerConfig });
      try {
        h.sandbox.setFault(ROUTE, fault);
        for (let i = 0; i < THRESHOLD; i++)
          expect((await h.gql(LIST)).errors?.[0]?.extensions.code).toBe(code);
        const open = await h.gql(LIST);
        expect(open.errors?.[0]?.extensions.code).toBe('UPSTREAM_UNAVAILABLE');
        expect(open.errors?.[0]?.message).toContain('paused');
        expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(THRESHOLD);
      } finally {
        await h.close();
      }
    });
  }

  it('reports its state and transitions as metrics', async () => {
    const metrics = createMetrics();
    const h = await createHarness({
      config: { upstream: { retries: 0, breakerThreshold: 2, breakerCooldownMs: 200 } },
      metrics,
      onCall: (call) => metrics.observeUpstreamCall(call),
      onBreakerChange: (state, route) => metrics.observeBreaker(state, route),
    });
    const scrape = async () => (await h.app.fetch('http://facade.test/metrics')).text();
    const value = (text: string, pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
    const state = /^upstream_breaker_state\{route="GET \/git\/v1\/repo"\} (\d+)$/m;
    const entered = (name: string) =>
      new RegExp(
        `^upstream_breaker_transitions_total\\{state="${name}",route="GET /git/v1/repo"\\} (\\d+)$`,
        'm',
      );
    try {
      // A route's series appears with its circuit's first change: none means closed.
      expect(await scrape()).not.toMatch(/^upstream_breaker_state\{/m);
      h.sandbox.setFault(ROUTE, { status: 503 });
      await h.gql(LIST);
      await h.gql(LIST);
      const open = await scrape();
      expect(value(open, state)).toBe(1);
      expect(value(open, entered('open'))).toBe(1);
      h.sandbox.clearFaults();
      await expect
        .poll(async () => (await h.gql(LIST)).errors, { interval: 50, timeout: 5_000 })
        .toBeUndefined();
      const closed = await scrape();
      expect(value(closed, state)).toBe(0);
      expect(value(closed, entered('half_open'))).toBe(1);
      expect(value(closed, entered('closed'))).toBe(1);
    } finally {
      await h.close();
    }
  });
});

describe('cancellation and the breaker', () => {
  const metrics = createMetrics();
  const calls: CompletedCall[] = [];
  const h = useHarness({
    config: { upstream: { retries: 0, breakerThreshold: 2, breakerCooldownMs: 60_000 } },
    metrics,
    onCall: (call) => {
      calls.push(call);
      metrics.observeUpstreamCall(call);
    },
  });
  let server: Listening;
  beforeAll(async () => {
    server = await listen(h.app);
  });
  afterAll(() => server.close());

  it('never opens on clients that go away, nor counts them as upstream faults', async () => {
    for (let i = 0; i < 4; i++) {
      h.sandbox.setFault(ROUTE, { delayMs: 5_000, times: 1 });
      const request = abandonable(server.url);
      await expect.poll(() => upstreamRequests(h.sandbox, ROUTE).length).toBe(i + 1);
      expect(await request.abandon()).toBe('aborted');
      await expect.poll(() => calls.length, { timeout: 2_000 }).toBe(i + 1);
    }
    expect(calls.map((call) => call.outcome)).toEqual(Array(4).fill('cancelled'));
    const ok = await h.gql(LIST);
    expect(ok.errors).toBeUndefined();
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(5);
    const text = await (await h.app.fetch('http://facade.test/metrics')).text();
    expect(text).not.toMatch(/UPSTREAM_UNAVAILABLE|UPSTREAM_TIMEOUT/);
    expect(text).toMatch(
      /upstream_calls_total\{route="GET \/git\/v1\/repo",status="cancelled"\} 4/,
    );
  });
});
