import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisConnection, RedisMiss } from '../../src/redis.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { connected, hasRedis, startRedis, stopRedis } from '../helpers/redis.js';

// The connection's own time to skip Redis after failures in a row, and a little more.
const SKIP_MS = 2_000;

describe.skipIf(!hasRedis)("the Redis connection's circuit, over a paused redis-server", () => {
  let redisProcess: ChildProcess | undefined;
  let redis: RedisConnection;
  const misses: RedisMiss[] = [];
  const availability: boolean[] = [];
  const lines: Array<{ level: string; msg: string; err?: unknown }> = [];
  let where = '';

  beforeAll(async () => {
    const started = await startRedis();
    redisProcess = started.process;
    where = started.url;
    // A deadline long enough that a trial command is still waiting while the others are sent.
    redis = await connected(started.url, {
      timeoutMs: 1_500,
      onMiss: (reason) => misses.push(reason),
      onAvailability: (available) => availability.push(available),
      logger: createLogger('info', { write: (line: string) => lines.push(JSON.parse(line)) }),
    });
  }, 30_000);

  afterAll(async () => {
    redisProcess?.kill('SIGCONT');
    redis?.disconnect();
    await stopRedis(redisProcess);
  });

  it('lets one trial through once the skipping time is over, and no other command waits on it', async () => {
    expect(await redis.run(() => redis.client.ping())).toBe('PONG');
    expect(redis.available).toBe(true);
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
    // One line when it went away (a warning, without a stack) and one when it came back; none at
    // the start, which the start-up line covers.
    expect(lines.map(({ level, msg }) => [level, msg])).toEqual([
      [
        'warn',
        `Redis at ${where} not answering; each process counts and keeps in memory until it does`,
      ],
      ['info', `Redis at ${where} answering again`],
    ]);
    expect(lines[0]?.err).toBeUndefined();
    redis.disconnect();
    // Closed on purpose, once its socket has closed: unavailable, and nothing more said.
    await expect.poll(() => redis.available).toBe(false);
    expect(await redis.ready(50)).toBe(false);
    expect(lines).toHaveLength(2);
  }, 30_000);
});
