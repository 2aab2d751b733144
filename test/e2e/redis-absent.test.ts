import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, waitForPort } from '../helpers/net.js';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';
import { hasRedis, stopRedis } from '../helpers/redis.js';

// Another process on two shared cores: what it does next may take a while to show.
const POLL = { interval: 100, timeout: 15_000 };

describe.skipIf(!hasRedis)('a facade whose Redis is down from the start', () => {
  let facade: FacadeProcess | undefined;
  let redis: ChildProcess | undefined;

  afterAll(async () => {
    await facade?.stop(5_000);
    await stopRedis(redis);
  }, 30_000);

  it('reads as unavailable until Redis answers, says so once, and uses it once it does', async () => {
    const port = await freePort();
    facade = await startFacade({ REDIS_URL: `redis://127.0.0.1:${port}` });
    const base = facade.url.replace('/graphql', '');
    const readiness = async () =>
      (await (await fetch(`${base}/readiness`)).json()) as Record<string, unknown>;
    const metrics = async () => (await fetch(`${base}/metrics`)).text();
    const redisLines = () =>
      (facade as FacadeProcess).lines.filter((line) => /redis/i.test(String(line.msg)));

    // Before any request, and after a few that missed.
    expect(await readiness()).toEqual({ ready: true, redis: 'unavailable' });
    expect(await metrics()).toMatch(/^redis_available 0$/m);
    for (let i = 0; i < 3; i++) expect((await post(facade.url, '{ __typename }')).status).toBe(200);

    // The start-up line says what would be shared and that Redis did not answer.
    await expect.poll(() => facade?.lines.some((line) => line.store === 'redis'), POLL).toBe(true);
    const startup = facade.lines.find((line) => line.store === 'redis');
    expect(startup).toMatchObject({
      answered: false,
      shared: ['rate limits', 'APQ documents', 'answers', "the repository list's kept ranges"],
      prefix: 'graphql-facade:',
    });
    expect(String(startup?.msg)).toMatch(
      /^Rate limits, APQ documents, answers and the repository list's kept ranges to be shared in Redis at redis:\/\/127\.0\.0\.1:\d+, which has not answered/,
    );
    // ioredis retries every second: one line said it is away, none repeats it, none has a stack.
    await sleep(3_000);
    const away = redisLines().filter((line) => /not answering/.test(String(line.msg)));
    expect(away).toHaveLength(1);
    expect(redisLines().filter((line) => line.err !== undefined)).toEqual([]);
    expect(await readiness()).toEqual({ ready: true, redis: 'unavailable' });

    redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    await waitForPort(port);
    await expect.poll(async () => (await readiness()).redis, POLL).toBe('available');
    expect(await metrics()).toMatch(/^redis_available 1$/m);
    expect(redisLines().filter((line) => /answering again$/.test(String(line.msg)))).toHaveLength(
      1,
    );
  }, 60_000);
});
