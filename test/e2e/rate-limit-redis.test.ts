import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, waitForPort } from '../helpers/net.js';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';
import { hasRedis } from '../helpers/redis.js';

const QUERY = '{ repositories(limit: 1) { total } }';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('rate limits in Redis, shared by two facade processes', () => {
  it.runIf(!hasRedis && process.env.CI === 'true')('needs redis-server in CI', () => {
    expect.fail('redis-server is not installed: .ci/run installs Debian\'s "redis-server"');
  });

  describe.skipIf(!hasRedis)('with a real redis-server', () => {
    let redisProcess: ChildProcess | undefined;
    let redis: Redis;
    let redisUrl: string;
    const facades: FacadeProcess[] = [];

    beforeAll(async () => {
      const port = await freePort();
      redisProcess = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        {
          stdio: 'ignore',
        },
      );
      redisUrl = `redis://127.0.0.1:${port}`;
      await waitForPort(port);
      redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      redis.on('error', () => {});
      const env = {
        REDIS_URL: redisUrl,
        // On two loaded cores a healthy Redis can answer past the default deadline, and a miss
        // would count in one process's memory: what is tested here is the sharing.
        REDIS_TIMEOUT_MS: '2000',
        RATE_LIMIT_POINTS: '5',
        RATE_LIMIT_ADDRESS_POINTS: '12',
        RATE_LIMIT_WINDOW_S: '60',
      };
      facades.push(...(await Promise.all([startFacade(env), startFacade(env)])));
    }, 60_000);

    afterAll(async () => {
      await Promise.all(facades.map((facade) => facade.stop(5_000)));
      redis?.disconnect();
      if (redisProcess && redisProcess.exitCode === null) {
        redisProcess.kill('SIGTERM');
        await Promise.race([
          new Promise((resolve) => redisProcess?.once('exit', resolve)),
          sleep(5_000),
        ]);
        if (redisProcess.exitCode === null) redisProcess.kill('SIGKILL');
      }
    }, 30_000);

    it('gives one client one budget across both replicas', async () => {
      const [a, b] = facades as [FacadeProcess, FacadeProcess];
      // The start-up line about Redis comes once Redis answered, after the listening line.
      await expect
        .poll(() => a.lines.some((line) => line.store === 'redis'), { timeout: 5_000 })
        .toBe(true);
      const statuses: number[] = [];
      for (const facade of [a, b, a, b, a]) {
        statuses.push((await post(facade.url, QUERY, bearer('shared-client'))).status);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      const sixth = await post(b.url, QUERY, bearer('shared-client'));
      expect(sixth.status).toBe(429);
      expect(
        (sixth.body.errors as Array<{ extensions: { code: string } }>)[0]?.extensions.code,
      ).toBe('RATE_LIMITED');
      expect((await post(a.url, QUERY, bearer('shared-client'))).status).toBe(429);
      expect((await post(a.url, QUERY, bearer('another-client'))).status).toBe(200);
    });

    it('holds one address to its ceiling across both replicas, whatever tokens it invents', async () => {
      const addressKeys = await redis.keys('*rl-address*');
      expect(addressKeys).toHaveLength(1);
      const spent = Number(await redis.get(addressKeys[0] as string));
      const statuses: number[] = [];
      for (let i = 0; i < 16; i++) {
        const facade = facades[i % 2] as FacadeProcess;
        statuses.push((await post(facade.url, QUERY, bearer(`invented-${i}`))).status);
      }
      const left = 12 - spent;
      expect(statuses).toEqual([...Array(left).fill(200), ...Array(16 - left).fill(429)]);
    });

    it('keeps hashed keys in Redis, never a raw token', async () => {
      const keys = await redis.keys('*');
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.join('\n')).not.toMatch(/shared-client|another-client/);
    });
  });
});
