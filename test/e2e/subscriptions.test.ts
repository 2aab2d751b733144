import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RedisConnection } from '../../src/redis.js';
import { createRedisDnsWatchStore } from '../../src/upstream/dns-watch-store.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { type Listening, listen } from '../helpers/net.js';
import { type FacadeProcess, startFacade } from '../helpers/process.js';
import { connected, hasRedis, startRedis, stopRedis } from '../helpers/redis.js';
import { sseClient, subscribe } from '../helpers/subscriptions.js';

const DOMAIN = 'fleet.example.com';
const HOST = `_service_custom_hostname.${DOMAIN}`;
const CODE = 'svc-verify-fleet';

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(() => dns?.close());

describe.skipIf(!hasRedis)('watches shared by two replicas on one Redis', () => {
  const intervalMs = 400;
  let redis: { url: string; process: ChildProcess } | undefined;
  let h: Harness;
  const connections: RedisConnection[] = [];
  const served: Listening[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    h = await createHarness({
      config: {
        dns: { servers: [dns.address], timeoutMs: 1_000, tries: 2 },
        subscriptions: { minIntervalMs: intervalMs, maxIntervalMs: intervalMs, maxPerClient: 10 },
      },
    });
  });
  afterAll(async () => {
    for (const connection of connections) connection.disconnect();
    await h?.close();
    await stopRedis(redis?.process);
  });
  afterEach(async () => {
    await Promise.all(served.splice(0).map((server) => server.close()));
  });

  /** A replica: its own app, Redis connection and port, as a second process would have. */
  async function replica(): Promise<string> {
    const connection = await connected(redis?.url as string);
    connections.push(connection);
    const app = h.createApp({
      dnsWatchStore: createRedisDnsWatchStore(connection, { leaseMs: 2_000 }),
    });
    const server = await listen(app);
    served.push(server);
    return server.url;
  }

  it('looks a name up about once per interval for ten subscribers on two replicas', async () => {
    dns.remove(HOST);
    dns.clearQueries();
    const [one, two] = [await replica(), await replica()];
    const started = Date.now();
    const watches = Array.from({ length: 10 }, (_, i) =>
      subscribe(sseClient(i % 2 ? one : two), { domain: DOMAIN, code: CODE }),
    );
    await Promise.all(watches.map((watch) => watch.next()));
    await expect.poll(() => dns.queriesFor(HOST).length, { timeout: 10_000 }).toBeGreaterThan(4);
    dns.setTxt(HOST, [CODE]);
    const ends = await Promise.all(watches.map((watch) => watch.rest()));
    const elapsed = Date.now() - started;
    // Each replica alone would look up once per interval: twice as many.
    expect(dns.queriesFor(HOST).length).toBeLessThanOrEqual(Math.floor(elapsed / intervalMs) + 1);
    for (const events of ends) {
      expect(events.map((event) => event.data?.domainDnsCheck.matches)).toEqual([true]);
    }
  });

  it('looks up alone when Redis is gone', async () => {
    dns.remove(HOST);
    const url = await replica();
    await stopRedis(redis?.process);
    const watch = subscribe(sseClient(url), { domain: DOMAIN, code: CODE });
    expect((await watch.next())?.data?.domainDnsCheck).toMatchObject({
      host: HOST,
      matches: false,
    });
    dns.setTxt(HOST, [CODE]);
    expect((await watch.next())?.data?.domainDnsCheck.matches).toBe(true);
    expect(await watch.next()).toBeUndefined();
  });
});

describe('the process on SIGTERM', () => {
  let facade: FacadeProcess | undefined;
  afterEach(() => facade?.stop(5_000));

  it('sends each open stream a last event, completes it, and exits 0', async () => {
    dns.remove(HOST);
    facade = await startFacade({
      DNS_SERVERS: dns.address,
      DNS_WATCH_MIN_INTERVAL_MS: '200',
      SHUTDOWN_GRACE_MS: '10000',
    });
    const watches = [1, 2].map(() =>
      subscribe(sseClient((facade as FacadeProcess).url), { domain: DOMAIN, code: CODE }),
    );
    await Promise.all(watches.map((watch) => watch.next()));
    const signalled = Date.now();
    facade.child.kill('SIGTERM');
    for (const watch of watches) {
      const last = await watch.rest();
      expect(last.map((event) => event.data?.domainDnsCheck.error)).toEqual([
        expect.stringMatching(/^Watch ended: the server is restarting\. No such name/),
      ]);
    }
    expect(await Promise.race([facade.exited, sleep(10_000).then(() => 'still running')])).toBe(0);
    // Within the grace.
    expect(Date.now() - signalled).toBeLessThan(10_000);
    const ended = facade.lines.filter((line) => line.msg === 'subscription ended');
    expect(ended.map((line) => line.reason)).toEqual(['shutdown', 'shutdown']);
  }, 60_000);
});
