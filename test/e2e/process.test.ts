import { readFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { type FacadeProcess, post, runFacade, startFacade } from '../helpers/process.js';

const REPOS = 'query Repos { repositories(limit: 3) { total items { id defaultBranch } } }';
// Another process on two shared cores: what it does next may take a while to show.
const POLL = { interval: 50, timeout: 10_000 };

const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

describe('the facade process, as `npm start` runs it', () => {
  let facade: FacadeProcess;
  beforeAll(async () => {
    facade = await startFacade({ PORT: '0' });
  }, 40_000);
  afterAll(() => facade?.stop(5_000));

  it('serves on port 4000 by default', () => {
    expect(loadConfig({}).port).toBe(4000);
  });

  it('says that it fronts the built-in sandbox and where it listens, in its first lines', () => {
    const [first, second, third] = facade.lines;
    expect(first?.msg).toMatch(/^Upstream: the built-in sandbox at http:\/\/127\.0\.0\.1:\d+ /);
    expect(facade.sandboxUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(second?.msg).toMatch(/GraphQL facade \S+ listening on http:\/\/localhost:\d+\/graphql/);
    expect(second?.level).toBe('info');
    expect(second).toMatchObject({ version: PACKAGE_VERSION, node: process.version });
    expect(third).toMatchObject({ upstream: facade.sandboxUrl });
  });

  it('answers repositories over HTTP, with a request id and one log line', async () => {
    const response = await post(facade.url, REPOS, {
      authorization: 'Bearer e2e-secret-token',
      'x-request-id': 'e2e-1',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('e2e-1');
    const data = response.body.data as { repositories: { total: number; items: unknown[] } };
    expect(data.repositories.total).toBe(50);
    expect(data.repositories.items).toHaveLength(3);

    // The line is written off the request path, so it may follow the answer.
    await expect
      .poll(() => facade.lines.find((l) => l.requestId === 'e2e-1'), POLL)
      .toMatchObject({
        msg: 'request',
        operationName: 'Repos',
        status: 200,
        upstreamCalls: 1,
      });
    expect(facade.stdout()).not.toContain('e2e-secret-token');
  });

  it('serves /health, /readiness and /metrics', async () => {
    const base = facade.url.replace('/graphql', '');
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect((await fetch(`${base}/readiness`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/upstream_calls_total\{route="GET \/git\/v1\/repo",status="200"\} \d+/);
    expect(metrics).toMatch(/process_resident_memory_bytes/);
    expect(metrics).toContain(
      `facade_build_info{version="${PACKAGE_VERSION}",node="${process.version}"} 1`,
    );
  });
});

describe('configuration errors', () => {
  // Something else already listens here, on every address, as a second replica would.
  let busy: Server;
  let busyPort = 0;
  beforeAll(async () => {
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, resolve));
    busyPort = (busy.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => busy?.close(() => resolve())));

  // What loadConfig refuses, and the message main.ts prints after "Invalid configuration: ", is
  // checked in-process (test/app/config.test.ts); one such case here proves the line itself. The
  // listen failures are main.ts's own: the variable each names is checked only here (PORT in the
  // next test). With UPSTREAM_URL the development entry starts no sandbox: the facade alone runs.
  it('stops start-up with one stderr line naming the variable, no secret, no stack, exit 1', async () => {
    const upstream = { UPSTREAM_URL: 'http://127.0.0.1:9' };
    const cases: Array<[Record<string, string>, RegExp, string?]> = [
      [
        { ...upstream, REDIS_URL: 'http://user:hunter2@cache:6379' },
        /^Invalid configuration: REDIS_URL: /,
        'hunter2',
      ],
      [{ NODE_ENV: 'production' }, /^Invalid configuration: UPSTREAM_URL: not set/],
      [{ ...upstream, HOST: 'not-a-host' }, /^Cannot start: HOST: .*ENOTFOUND/],
      [{ SANDBOX_PORT: String(busyPort) }, /^Cannot start: SANDBOX_PORT: .*EADDRINUSE/],
      [
        { ...upstream, METRICS_PORT: String(busyPort) },
        /^Cannot start: METRICS_PORT: .*EADDRINUSE/,
      ],
    ];
    // Each process loads the whole app before it reads its configuration, five at once: on a
    // loaded machine one takes well over runFacade's default 20 s before it is killed.
    const results = await Promise.all(cases.map(([env]) => runFacade(env, 80_000)));
    for (const [index, [env, pattern, secret]] of cases.entries()) {
      const result = results[index];
      const what = JSON.stringify(env);
      expect(result?.status, what).toBe(1);
      const lines = result?.stderr.trimEnd().split('\n') ?? [];
      expect(lines, what).toHaveLength(1);
      expect(lines[0], what).toMatch(pattern);
      expect(result?.stderr, what).not.toMatch(/^\s+at /m);
      // Secrets are never echoed, not even to say they are wrong.
      if (secret) expect(`${result?.stderr}${result?.stdout}`, what).not.toContain(secret);
      expect(result?.stdout, what).toBe('');
    }
  }, 90_000);

  it('reports a busy port at once, before the workers', async () => {
    // Never called: nothing starts before the port is found busy.
    const upstream = 'http://127.0.0.1:9';
    const production = { NODE_ENV: 'production', UPSTREAM_URL: upstream };
    const runs = await Promise.all(
      ['1', '2'].map(async (workers) => {
        const began = Date.now();
        const result = await runFacade(
          { ...production, WORKERS: workers, PORT: String(busyPort) },
          30_000,
        );
        return { workers, ms: Date.now() - began, ...result };
      }),
    );
    for (const { workers, ms, status, stdout, stderr } of runs) {
      expect(status, `WORKERS=${workers}`).toBe(1);
      expect(stderr, `WORKERS=${workers}`).toBe(
        `Cannot start: PORT: cannot listen on *:${busyPort}: the port is already in use (EADDRINUSE)\n`,
      );
      // Nothing was started, so nothing was logged: no worker.
      expect(stdout, `WORKERS=${workers}`).toBe('');
      // What a process start costs on a busy machine, and no more.
      expect(ms, `WORKERS=${workers}`).toBeLessThan(20_000);
    }
  }, 60_000);

  it('logs service-key mode without a client check loudly', async () => {
    const facade = await startFacade({
      UPSTREAM_API_KEY: 'svc-key-xyz',
      ALLOW_ANONYMOUS_SERVICE_KEY: 'true',
    });
    try {
      const warning = facade.lines.find((line) => line.level === 'warn');
      expect(warning?.msg).toMatch(/SERVICE-KEY MODE WITHOUT A CLIENT CHECK/);
      expect(facade.stdout()).not.toContain('svc-key-xyz');
    } finally {
      await facade.stop(5_000);
    }
  }, 40_000);
});

describe('METRICS_PORT', () => {
  const metricsUrl = async (facade: FacadeProcess) => {
    const deadline = Date.now() + 20_000;
    const logged = () => facade.lines.find((line) => 'metricsUrl' in line)?.metricsUrl;
    while (!logged()) {
      if (Date.now() > deadline) throw new Error(`no metrics line:\n${facade.stdout()}`);
      await sleep(50);
    }
    return String(logged()).replace('localhost', '127.0.0.1');
  };

  it('serves /metrics on its own port, and nothing at /metrics on the GraphQL port', async () => {
    const facade = await startFacade({ METRICS_PORT: '0' });
    try {
      expect((await post(facade.url, REPOS)).status).toBe(200);
      const response = await fetch(await metricsUrl(facade));
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await response.text();
      expect(text).toMatch(/upstream_calls_total\{route="GET \/git\/v1\/repo",status="200"\} \d+/);
      expect(text).toMatch(/process_resident_memory_bytes/);
      expect((await fetch(facade.url.replace('/graphql', '/metrics'))).status).toBe(404);
      expect((await fetch(facade.url.replace('/graphql', '/health'))).status).toBe(200);
    } finally {
      await facade.stop(5_000);
    }
  }, 40_000);

  it("serves every worker's metrics from the primary with WORKERS=2", async () => {
    const facade = await startFacade({ METRICS_PORT: '0', WORKERS: '2' });
    try {
      const url = await metricsUrl(facade);
      const deadline = Date.now() + 20_000;
      while (facade.lines.filter((line) => typeof line.port === 'number').length < 2) {
        expect(Date.now()).toBeLessThan(deadline);
        await sleep(50);
      }
      for (let i = 0; i < 4; i++) expect((await post(facade.url, REPOS)).status).toBe(200);
      const text = await (await fetch(url)).text();
      expect(text).toContain('facade_worker_restarts_total 0');
      const workers = new Set([...text.matchAll(/worker="(\d+)"/g)].map((match) => match[1]));
      expect(workers.size).toBe(2);
      expect((await fetch(facade.url.replace('/graphql', '/metrics'))).status).toBe(404);
    } finally {
      await facade.stop(10_000);
    }
  }, 60_000);
});

describe('shutdown on SIGTERM', () => {
  const slowUpstream = async (facade: FacadeProcess, delayMs: number) => {
    const response = await fetch(`${facade.sandboxUrl}/__sandbox/faults/GET/git/v1/repo`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ delayMs }),
    });
    expect(response.status).toBe(204);
  };
  /** Once `npm start`'s sandbox has received the facade's call, the request is in flight. */
  const upstreamReached = (facade: FacadeProcess) =>
    expect
      .poll(async () => {
        const log = await fetch(`${facade.sandboxUrl}/__sandbox/requests`);
        return ((await log.json()) as { requests: unknown[] }).requests.length;
      }, POLL)
      .toBe(1);

  it('stops accepting, lets the request in flight finish, then exits 0', async () => {
    const facade = await startFacade({ SANDBOX_FAULTS: 'true', SHUTDOWN_GRACE_MS: '10000' });
    try {
      await slowUpstream(facade, 1500);
      const started = Date.now();
      const inFlight = post(facade.url, REPOS);
      await upstreamReached(facade);
      facade.child.kill('SIGTERM');
      // Logged in the tick that closes the listener.
      await expect
        .poll(() => facade.lines.some((line) => line.msg === 'draining'), POLL)
        .toBe(true);
      await expect(fetch(facade.url.replace('/graphql', '/health'))).rejects.toThrow();

      const response = await inFlight;
      expect(response.status).toBe(200);
      expect((response.body.data as { repositories: { total: number } }).repositories.total).toBe(
        50,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
      expect(await Promise.race([facade.exited, sleep(10_000).then(() => 'still running')])).toBe(
        0,
      );
      expect(facade.lines.map((line) => line.msg)).toEqual(
        expect.arrayContaining(['draining', 'stopped']),
      );
    } finally {
      await facade.stop(5_000);
    }
  }, 40_000);

  it('lets every keep-alive client finish what it sends, answering it with Connection: close', async () => {
    const facade = await startFacade({ SHUTDOWN_GRACE_MS: '10000' });
    const origin = new URL(facade.url).origin;
    // One keep-alive connection each, as a load balancer or a service's HTTP client holds them.
    const clients = Array.from({ length: 12 }, () => new Client(origin, { pipelining: 1 }));
    let signalled = false;
    const failures: string[] = [];
    const closedAfterSignal = new Set<number>();
    const answered = new Set<number>();
    const run = async (client: Client, index: number) => {
      const until = () => signalled && Date.now() > stopAt;
      while (!until()) {
        try {
          const answer = await client.request({
            path: '/graphql',
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ query: '{ __typename }' }),
          });
          const body = await answer.body.text();
          if (answer.statusCode !== 200) failures.push(`${answer.statusCode} ${body}`);
          answered.add(index);
          if (answer.headers.connection === 'close') {
            if (signalled) closedAfterSignal.add(index);
            return;
          }
        } catch (error) {
          failures.push(String((error as { code?: string }).code ?? error));
          return;
        }
        // Some send back to back, some sit idle for a while between requests.
        await sleep(index % 3 === 0 ? 0 : 50 + ((index * 37) % 300));
      }
    };
    let stopAt = Number.POSITIVE_INFINITY;
    try {
      const running = clients.map(run);
      // Every connection open and answered once: the signal finds some idle, some sending.
      await expect.poll(() => answered.size, POLL).toBe(clients.length);
      facade.child.kill('SIGTERM');
      signalled = true;
      stopAt = Date.now() + 2_000;
      await Promise.all(running);
      expect(failures).toEqual([]);
      expect(closedAfterSignal.size).toBe(clients.length);
      expect(await Promise.race([facade.exited, sleep(10_000).then(() => 'still running')])).toBe(
        0,
      );
    } finally {
      await Promise.all(clients.map((client) => client.destroy()));
      await facade.stop(5_000);
    }
  }, 40_000);

  it('cuts what is still running once SHUTDOWN_GRACE_MS is over, and still exits 0', async () => {
    const facade = await startFacade({ SANDBOX_FAULTS: 'true', SHUTDOWN_GRACE_MS: '300' });
    try {
      await slowUpstream(facade, 20_000);
      const inFlight = post(facade.url, REPOS).then(
        () => 'answered',
        () => 'cut',
      );
      await upstreamReached(facade);
      const signalled = Date.now();
      facade.child.kill('SIGTERM');
      expect(await Promise.race([facade.exited, sleep(10_000).then(() => 'still running')])).toBe(
        0,
      );
      expect(Date.now() - signalled).toBeLessThan(5_000);
      expect(await inFlight).toBe('cut');
    } finally {
      await facade.stop(5_000);
    }
  }, 40_000);
});

describe('shutdown with a refresh under way', () => {
  it('fits the whole drain, refreshes included, in SHUTDOWN_GRACE_MS', async () => {
    const graceMs = 3_000;
    const facade = await startFacade({
      SANDBOX_FAULTS: 'true',
      SANDBOX_CACHE_CONTROL: 'max-age=1, stale-while-revalidate=60',
      SHUTDOWN_GRACE_MS: String(graceMs),
    });
    const origin = new URL(facade.url).origin;
    // A keep-alive connection that still sends once the drain has begun, as a load balancer's does.
    const client = new Client(origin, { pipelining: 1 });
    const read = async () => {
      const answer = await client.request({
        path: '/graphql',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: REPOS }),
      });
      return { status: answer.statusCode, age: answer.headers.age, body: await answer.body.text() };
    };
    const requests = async () => {
      const log = await fetch(`${facade.sandboxUrl}/__sandbox/requests`);
      return ((await log.json()) as { requests: unknown[] }).requests.length;
    };
    // A client that sends half its headers and then nothing: only the grace ends its connection.
    const slow = connect(Number(new URL(facade.url).port), '127.0.0.1');
    slow.on('error', () => {});
    try {
      expect((await read()).status).toBe(200);
      await sleep(1_100);
      // The refresh's call hangs upstream past any grace.
      await fetch(`${facade.sandboxUrl}/__sandbox/faults/GET/git/v1/repo`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ delayMs: 60_000 }),
      });
      await new Promise<void>((resolve) =>
        slow.write('POST /graphql HTTP/1.1\r\nHost: a', () => resolve()),
      );
      const signalled = Date.now();
      facade.child.kill('SIGTERM');
      await expect
        .poll(() => facade.lines.some((line) => line.msg === 'draining'), POLL)
        .toBe(true);
      // Stale, at once: its refresh starts during the drain.
      const stale = await read();
      expect(stale.status).toBe(200);
      expect(Number(stale.age)).toBeGreaterThanOrEqual(1);
      await expect.poll(requests, POLL).toBe(2);
      expect(await Promise.race([facade.exited, sleep(20_000).then(() => 'still running')])).toBe(
        0,
      );
      // Waiting twice (connections, then refreshes) would be twice the grace.
      expect(Date.now() - signalled).toBeLessThan(graceMs + 1_500);
    } finally {
      slow.destroy();
      await client.destroy();
      await facade.stop(5_000);
    }
  }, 60_000);
});

describe('what one client may hold of the server', () => {
  const HEALTH = 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n';
  // It waits for the upstream, so a connection's requests cannot finish while Node parses them.
  const repos = (() => {
    const body = JSON.stringify({ query: REPOS });
    return `POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  })();

  /** A raw connection: what it has received, and when it was closed. */
  const connection = (port: number) => {
    const socket = connect(port, '127.0.0.1');
    const seen = { received: '', closedAt: 0 };
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      seen.received += chunk;
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      seen.closedAt = Date.now();
    });
    return { socket, seen };
  };
  const poll = async (done: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!done() && Date.now() < deadline) await sleep(20);
    return done();
  };

  let facade: FacadeProcess;
  beforeAll(async () => {
    facade = await startFacade({ REQUEST_TIMEOUT_MS: '1000' });
  }, 40_000);
  afterAll(() => facade?.stop(5_000));

  it('answers 408 and closes a request still arriving after REQUEST_TIMEOUT_MS', async () => {
    const head = `POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    // A body that trickles in after whole headers, and headers that trickle in themselves.
    for (const [sent, trickled] of [
      [head, ' '],
      ['GET /health HTTP/1.1\r\nX-Slow: ', 'x'],
    ] as const) {
      const { socket, seen } = connection(facade.port);
      socket.write(sent);
      const began = Date.now();
      const trickle = setInterval(() => socket.write(trickled), 200);
      try {
        expect(await poll(() => seen.closedAt > 0, 8_000), JSON.stringify(sent)).toBe(true);
      } finally {
        clearInterval(trickle);
        socket.destroy();
      }
      // Node checks its timeouts every second: cut between one and about two seconds in.
      expect(seen.closedAt - began).toBeGreaterThanOrEqual(900);
      expect(seen.closedAt - began).toBeLessThan(4_000);
      expect(seen.received).toMatch(/^HTTP\/1\.1 408 /);
    }
  }, 30_000);

  it('destroys a connection that pipelines many requests and never reads, and serves on', async () => {
    const socket = connect(facade.port, '127.0.0.1');
    let closed = false;
    socket.pause();
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
    });
    socket.write(repos.repeat(200));
    // A client that reads nothing sees the end only when its next write fails.
    const more = setInterval(() => socket.write(repos), 100);
    try {
      expect(await poll(() => closed, 5_000)).toBe(true);
    } finally {
      clearInterval(more);
      socket.destroy();
    }

    // A client that pipelines a few and reads the answers gets every one.
    const { socket: few, seen } = connection(facade.port);
    few.write(repos.repeat(8));
    const answers = () => seen.received.match(/HTTP\/1\.1 200 /g)?.length ?? 0;
    expect(await poll(() => answers() === 8, 5_000)).toBe(true);
    few.destroy();
    expect((await post(facade.url, REPOS)).status).toBe(200);
  }, 30_000);

  it('closes a connection beyond MAX_CONNECTIONS at once, and takes one again when another ends', async () => {
    const bounded = await startFacade({ MAX_CONNECTIONS: '2' });
    try {
      // Each has been answered, so each is the server's, kept alive.
      const held = [connection(bounded.port), connection(bounded.port)];
      for (const { socket, seen } of held) {
        socket.write(HEALTH);
        expect(await poll(() => seen.received.startsWith('HTTP/1.1 200 '), 5_000)).toBe(true);
      }
      const extra = connection(bounded.port);
      extra.socket.write(HEALTH);
      expect(await poll(() => extra.seen.closedAt > 0, 5_000)).toBe(true);
      expect(extra.seen.received).toBe('');

      held[0]?.socket.destroy();
      // The server frees the slot once it has seen that close; until then it closes a new one as
      // it closed the extra one.
      const admitted = async () => {
        const next = connection(bounded.port);
        next.socket.write(HEALTH);
        await poll(() => next.seen.received !== '' || next.seen.closedAt > 0, 5_000);
        next.socket.destroy();
        return next.seen.received.startsWith('HTTP/1.1 200 ');
      };
      await expect.poll(admitted, POLL).toBe(true);
      for (const { socket } of held) socket.destroy();
    } finally {
      await bounded.stop(5_000);
    }
  }, 40_000);
});
