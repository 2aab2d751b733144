import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { hasRedisTools, startRedisCluster, startRedisSentinel } from '../helpers/redis.js';

describe('the Redis topologies the tests run', () => {
  it.runIf(!hasRedisTools && process.env.CI === 'true')('needs them in CI', () => {
    expect.fail('.ci/run installs Debian\'s "redis-sentinel" and "redis-tools"');
  });

  it.skipIf(!hasRedisTools)(
    'starts a cluster of three masters that serves every slot',
    async () => {
      const cluster = await startRedisCluster();
      const seeds = cluster.url
        .replace('redis-cluster://', '')
        .split(',')
        .map((seed) => ({ host: '127.0.0.1', port: Number(seed.split(':')[1]) }));
      const client = new Cluster(seeds);
      try {
        expect(cluster.masters).toHaveLength(3);
        // Keys in slots of every master.
        for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) await client.set(key, key);
        expect(await client.mget('{x}1', '{x}2')).toEqual([null, null]);
        expect(
          await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((key) => client.get(key))),
        ).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
      } finally {
        client.disconnect();
        await cluster.stop();
      }
    },
    60_000,
  );

  it.skipIf(!hasRedisTools)(
    'starts a master, a replica and a sentinel that fails over',
    async () => {
      const sentinel = await startRedisSentinel();
      const url = new URL(sentinel.url);
      const client = new Redis({
        sentinels: url.host
          .split(',')
          .map((seed) => ({ host: '127.0.0.1', port: Number(seed.split(':')[1]) })),
        name: url.searchParams.get('sentinelServiceName') ?? '',
      });
      client.on('error', () => {});
      try {
        await client.set('k', 'v');
        expect(await sentinel.masterPort()).toBe(sentinel.master.port);
        const { port } = await sentinel.killMaster();
        expect(port).toBe(sentinel.replica.port);
        await expect
          .poll(() => client.set('k', 'w').catch(() => null), { timeout: 15_000 })
          .toBe('OK');
        expect(await client.get('k')).toBe('w');
      } finally {
        client.disconnect();
        await sentinel.stop();
      }
    },
    60_000,
  );
});
