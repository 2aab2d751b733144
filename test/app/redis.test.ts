import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisMiss, type RedisOptions } from '../../src/redis.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { freePort, waitForPort } from '../helpers/net.js';
import {
  connected,
  hasRedis,
  hasRedisTools,
  inspector,
  startRedis,
  startRedisCluster,
  startRedisSentinel,
  stopRedis,
} from '../helpers/redis.js';

// The connection's own time to skip Redis after failures in a row.
const SKIP_MS = 2_000;

interface Line {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** What a connection tells its owner: log lines, availability changes and misses. */
function watched() {
  const lines: Line[] = [];
  const availability: boolean[] = [];
  const misses: RedisMiss[] = [];
  const options: Partial<RedisOptions> = {
    logger: createLogger('info', { write: (line: string) => lines.push(JSON.parse(line)) }),
    onAvailability: (available) => availability.push(available),
    onMiss: (reason) => misses.push(reason),
  };
  return { lines, availability, misses, options };
}

const spawnRedis = (port: number) =>
  spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );

/** Timers this process holds: a deadline left running holds its command's closure until then. */
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

describe.skipIf(!hasRedis)('the Redis connection, down from the start', () => {
  let redisProcess: ChildProcess | undefined;

  afterAll(async () => {
    await stopRedis(redisProcess);
  });

  it('reads as unavailable, skips commands, says why once, and uses Redis once it answers', async () => {
    const port = await freePort();
    const where = `redis://127.0.0.1:${port}`;
    const seen = watched();
    const redis = await connectRedis(where, { timeoutMs: 2_000, ...seen.options });
    const delays: number[] = [];
    redis.client.on('reconnecting', (ms: number) => delays.push(ms));
    try {
      expect(redis.available).toBe(false);
      const listeners = redis.client.listenerCount('ready');
      expect(await redis.ready(350)).toBe(false);
      expect(await redis.ready(10)).toBe(false);
      // A wait that timed out leaves nothing on the client.
      expect(redis.client.listenerCount('ready')).toBe(listeners);
      // Not sent: a command would fail at once, and must not count against the circuit.
      await expect(redis.run(() => redis.client.ping())).rejects.toThrow();
      expect(seen.misses).toEqual(['skipped']);

      // Tried again sooner at first, then about once a second.
      await expect.poll(() => delays.length).toBeGreaterThanOrEqual(3);
      expect(delays.slice(0, 3)).toEqual([100, 200, 300]);
      // Every attempt fails, and one line says so, with the reason and without a stack.
      const refused = `connect ECONNREFUSED 127.0.0.1:${port}`;
      expect(seen.lines).toMatchObject([
        {
          level: 'warn',
          redis: where,
          timeoutMs: 2_000,
          skipMs: SKIP_MS,
          reason: refused,
          msg: `Redis at ${where} not answering (${refused}); each process counts and keeps in memory until it does`,
        },
      ]);
      expect(seen.lines[0]).not.toHaveProperty('err');
      expect(seen.availability).toEqual([false]);

      // Waits that end with Redis answering leave no timer behind.
      const before = timers();
      const waits = Array.from({ length: 8 }, () => redis.ready(60_000));
      redisProcess = spawnRedis(port);
      await waitForPort(port);
      expect(await Promise.all(waits)).toEqual(Array(8).fill(true));
      expect(timers() - before).toBeLessThanOrEqual(2);

      await expect.poll(() => redis.available).toBe(true);
      expect(seen.availability).toEqual([false, true]);
      expect(await redis.run(() => redis.client.ping())).toBe('PONG');
      expect(await redis.ready(0)).toBe(true);
      expect(seen.lines.slice(1)).toMatchObject([
        {
          level: 'info',
          redis: where,
          msg: `Redis at ${where} answering again`,
        },
      ]);

      // Gone again, without an error: the line gives no reason, and not the old one.
      await stopRedis(redisProcess);
      await expect.poll(() => redis.available).toBe(false);
      expect(seen.availability).toEqual([false, true, false]);
      await expect(redis.run(() => redis.client.ping())).rejects.toThrow();
      expect(seen.misses).toEqual(['skipped', 'skipped']);
      expect(seen.lines.slice(2)).toMatchObject([
        {
          level: 'warn',
          msg: `Redis at ${where} not answering; each process counts and keeps in memory until it does`,
        },
      ]);
      expect(seen.lines[2]).not.toHaveProperty('reason');
    } finally {
      redis.disconnect();
    }
  });
});

describe('the Redis connection to a Cluster or sentinels down from the start', () => {
  it.each([
    ['redis-cluster', 'Failed to refresh slots cache.'],
    ['redis-sentinel', 'All sentinels are unreachable.'],
  ])('reads %s as unavailable and says why, once', async (scheme, reason) => {
    const port = await freePort();
    const query = scheme === 'redis-sentinel' ? '?sentinelServiceName=primary' : '';
    const where = `${scheme}://127.0.0.1:${port}`;
    const seen = watched();
    const redis = await connectRedis(`${where}${query}`, { timeoutMs: 2_000, ...seen.options });
    try {
      expect(redis.available).toBe(false);
      await expect.poll(() => seen.lines.length).toBe(1);
      expect(seen.availability).toEqual([false]);
      expect(seen.lines[0]).toMatchObject({ level: 'warn', redis: where });
      expect(String(seen.lines[0]?.reason)).toContain(reason);
      // ioredis retries: the line is not repeated.
      await sleep(500);
      expect(seen.lines).toHaveLength(1);
    } finally {
      redis.disconnect();
    }
  });
});

describe.skipIf(!hasRedis)("the Redis connection's circuit, over a paused redis-server", () => {
  let redisProcess: ChildProcess | undefined;
  let url = '';

  beforeAll(async () => {
    const started = await startRedis();
    redisProcess = started.process;
    url = started.url;
  });

  afterAll(async () => {
    redisProcess?.kill('SIGCONT');
    await stopRedis(redisProcess);
  });

  it('lets one trial through once the skipping time is over, and no other command waits on it', async () => {
    const seen = watched();
    // A deadline long enough that a trial command is still waiting while the others are sent.
    const redis = await connected(url, { timeoutMs: 1_500, ...seen.options });
    const { misses, availability, lines } = seen;
    expect(await redis.run(() => redis.client.ping())).toBe('PONG');
    expect(redis.available).toBe(true);
    expect(availability).toEqual([true]);
    redisProcess?.kill('SIGSTOP');
    try {
      // Three commands past their deadline: skipped from then on, at once.
      await Promise.allSettled([1, 2, 3].map(() => redis.run(() => redis.client.ping())));
      expect(misses).toEqual(['timeout', 'timeout', 'timeout']);
      expect(redis.available).toBe(false);
      expect(availability).toEqual([true, false]);
      await expect(redis.run(() => redis.client.ping())).rejects.toThrow();
      expect(misses.at(-1)).toBe('skipped');

      await sleep(SKIP_MS + 200);
      // The trial goes to the still-paused Redis; those sent meanwhile are skipped before it ends.
      const settled: string[] = [];
      const trial = redis.run(() => redis.client.ping()).catch(() => settled.push('trial'));
      const others = Array.from({ length: 5 }, () =>
        redis.run(() => redis.client.ping()).catch(() => settled.push('other')),
      );
      await Promise.all([trial, ...others]);
      expect(settled).toEqual(['other', 'other', 'other', 'other', 'other', 'trial']);
      expect(misses.slice(-6).sort()).toEqual([
        'skipped',
        'skipped',
        'skipped',
        'skipped',
        'skipped',
        'timeout',
      ]);
    } finally {
      redisProcess?.kill('SIGCONT');
    }

    // Answering again: the next trial closes the circuit.
    await sleep(SKIP_MS + 200);
    expect(await redis.run(() => redis.client.ping())).toBe('PONG');
    expect(redis.available).toBe(true);
    expect(availability).toEqual([true, false, true]);
    // One line when it went away (a warning, without a stack or a reason: nothing failed, it was
    // late) and one when it came back; none at the start, which the start-up line covers.
    expect(lines).toMatchObject([
      {
        level: 'warn',
        redis: url,
        timeoutMs: 1_500,
        skipMs: SKIP_MS,
        msg: `Redis at ${url} not answering; each process counts and keeps in memory until it does`,
      },
      { level: 'info', redis: url, msg: `Redis at ${url} answering again` },
    ]);
    expect(lines[0]).not.toHaveProperty('reason');
    expect(lines[0]).not.toHaveProperty('err');
    redis.disconnect();
    // Closed on purpose, once its socket has closed: unavailable, and nothing more said.
    await expect.poll(() => redis.available).toBe(false);
    expect(await redis.ready(50)).toBe(false);
    expect(lines).toHaveLength(2);
    expect(availability).toEqual([true, false, true]);
  }, 30_000);
});

describe.skipIf(!hasRedis)("the Redis connection's commands", () => {
  let primary: { url: string; process: ChildProcess };

  beforeAll(async () => {
    primary = await startRedis();
  });

  afterAll(async () => {
    await stopRedis(primary?.process);
  });

  it("passes a failing command's own error back, and holds one that never settles to the deadline", async () => {
    const seen = watched();
    const redis = await connected(primary.url, { timeoutMs: 300, ...seen.options });
    const bare = await connected(primary.url, { timeoutMs: 300 });
    try {
      await redis.run(() => redis.client.lpush('a-list', 'x'));
      await expect(redis.run(() => redis.client.get('a-list'))).rejects.toThrow(/^WRONGTYPE/);
      // Told to nobody, the miss is still the command's own error.
      await expect(bare.run(() => bare.client.get('a-list'))).rejects.toThrow(/^WRONGTYPE/);
      // Not a Redis reply: ioredis's own deadline does not see it, the connection's does.
      await expect(redis.run(() => new Promise(() => {}))).rejects.toThrow('Command timed out');
      expect(seen.misses).toEqual(['error', 'timeout']);
    } finally {
      redis.disconnect();
      bare.disconnect();
    }
  });

  it('leaves no deadline running behind a command that settled', async () => {
    const redis = await connected(primary.url, { timeoutMs: 5_000 });
    try {
      await redis.run(() => redis.client.rpush('b-list', 'x'));
      const before = timers();
      for (let i = 0; i < 40; i++) {
        await redis.run(() => redis.client.ping());
        // One failure between successes: the circuit stays closed.
        await redis.run(() => redis.client.get('b-list')).catch(() => {});
      }
      expect(timers() - before).toBeLessThan(20);
    } finally {
      redis.disconnect();
    }
  });

  it('connects anew when its server answers READONLY, as a demoted master does, and not on other errors', async () => {
    // Told of nothing but its misses: going away and coming back needs no one to tell.
    const misses: RedisMiss[] = [];
    const redis = await connected(primary.url, {
      timeoutMs: 2_000,
      onMiss: (reason) => misses.push(reason),
    });
    const look = await inspector(primary.url);
    const connections = async () =>
      Number(/total_connections_received:(\d+)/.exec(await look.info('stats'))?.[1]);
    try {
      const before = await connections();
      await redis.run(() => redis.client.rpush('c-list', 'x'));
      await expect(redis.run(() => redis.client.get('c-list'))).rejects.toThrow(/^WRONGTYPE/);
      expect(await redis.run(() => redis.client.ping())).toBe('PONG');
      expect(await connections()).toBe(before);

      // A replica of a master that is not there: it refuses writes.
      await look.replicaof('127.0.0.1', String(await freePort()));
      // The write is not sent again to a server that refused it: a miss at once.
      await expect(redis.run(() => redis.client.set('key', 'value'))).rejects.toThrow();
      expect(misses).toEqual(['error', 'error']);
      await expect.poll(connections).toBe(before + 1);
      await look.replicaof('NO', 'ONE');
      await expect.poll(() => redis.available).toBe(true);
      expect(await redis.run(() => redis.client.set('key', 'value'))).toBe('OK');
      expect(await connections()).toBe(before + 1);
    } finally {
      await look.replicaof('NO', 'ONE').catch(() => {});
      look.disconnect();
      redis.disconnect();
    }
  });
});

describe("the Redis connection's transport", () => {
  let server: ReturnType<typeof createServer>;
  let port = 0;
  const sockets: Socket[] = [];
  const firstBytes: number[] = [];

  beforeAll(async () => {
    // Accepts and never answers: what the connection sends first says how it speaks.
    server = createServer((socket) => {
      sockets.push(socket);
      socket.once('data', (data: Buffer) => firstBytes.push(data[0] as number));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });

  it('speaks TLS to a rediss:// or rediss-cluster:// URL and plain RESP to redis://', async () => {
    for (const scheme of ['rediss', 'rediss-cluster']) {
      const secure = await connectRedis(`${scheme}://127.0.0.1:${port}`, { timeoutMs: 2_000 });
      try {
        await expect.poll(() => firstBytes.length).toBeGreaterThan(0);
        // A TLS handshake record.
        expect(firstBytes.splice(0)).toEqual([0x16]);
      } finally {
        secure.disconnect();
      }
    }
    const plain = await connectRedis(`redis://127.0.0.1:${port}`, { timeoutMs: 2_000 });
    try {
      await expect.poll(() => firstBytes.length).toBe(1);
      // A RESP array: a command.
      expect(String.fromCharCode(firstBytes[0] as number)).toBe('*');
      // Connected but never answering: unavailable, and nothing sent.
      expect(plain.available).toBe(false);
      expect(await plain.ready(100)).toBe(false);
      await expect(plain.run(() => plain.client.ping())).rejects.toThrow();
    } finally {
      plain.disconnect();
    }
  });
});

describe.skipIf(!hasRedisTools)('the Redis connection to a Cluster and to Sentinel', () => {
  it('writes through a Cluster under its key prefix, on whichever master holds each key', async () => {
    const cluster = await startRedisCluster();
    const redis = await connected(cluster.url, { keyPrefix: 'cluster-test:' });
    const seeds = cluster.masters.map((node) => ({ host: '127.0.0.1', port: node.port }));
    const look = new Cluster(seeds);
    try {
      const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
      for (const key of keys) await redis.run(() => redis.client.set(key, key));
      expect(await Promise.all(keys.map((key) => look.get(`cluster-test:${key}`)))).toEqual(keys);
      expect(redis.available).toBe(true);
    } finally {
      look.disconnect();
      redis.disconnect();
      await cluster.stop();
    }
  }, 60_000);

  it('writes to the master the sentinels name, under its key prefix', async () => {
    const sentinel = await startRedisSentinel();
    const misses: RedisMiss[] = [];
    const redis = await connected(sentinel.url, {
      keyPrefix: 'sentinel-test:',
      onMiss: (reason) => misses.push(reason),
    });
    const master = await inspector(`redis://127.0.0.1:${await sentinel.masterPort()}`);
    try {
      await redis.run(() => redis.client.set('key', 'value'));
      expect(await master.get('sentinel-test:key')).toBe('value');
      expect(redis.available).toBe(true);

      // Demoted behind the sentinels' back, the master refuses the next write: a miss at once,
      // not a wait, and the connection asks the sentinels again until it is a master again.
      await master.replicaof('127.0.0.1', String(await freePort()));
      await expect(redis.run(() => redis.client.set('key', 'other'))).rejects.toThrow();
      expect(misses).toEqual(['error']);
      await expect.poll(() => redis.available).toBe(false);
      await master.replicaof('NO', 'ONE');
      await expect.poll(() => redis.available, { timeout: 10_000 }).toBe(true);
      expect(await redis.run(() => redis.client.set('key', 'other'))).toBe('OK');
      expect(await master.get('sentinel-test:key')).toBe('other');
    } finally {
      master.disconnect();
      redis.disconnect();
      await sentinel.stop();
    }
  }, 60_000);
});
