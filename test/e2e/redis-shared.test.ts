import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisConnection } from '../../src/redis.js';
import { type Harness, postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';
import {
  connected,
  hasRedis,
  hasRedisTools,
  startRedis,
  startRedisCluster,
  startRedisSentinel,
  stopRedis,
} from '../helpers/redis.js';
import { type App, redisReplica } from '../helpers/redis-replica.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const LIST = '{ repositories(limit: 3) { items { id } } }';
const REPO_ROUTE = 'GET /git/v1/repo';
const POINTS = 4;

async function post(app: App, body: Record<string, unknown>, token: string) {
  const response = await app.fetch('http://facade.test/graphql', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      data?: unknown;
      errors?: Array<{ extensions?: { code?: string } }>;
    },
  };
}
const persisted = (hash: string) => ({
  extensions: { persistedQuery: { version: 1, sha256Hash: hash } },
});

const replica = (h: Harness, connection: RedisConnection) => redisReplica(h, connection, POINTS);

/** Every key of every node, and the nodes' ports. */
async function keysOf(ports: number[]): Promise<string[]> {
  const keys: string[] = [];
  for (const port of ports) {
    const look = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
    look.on('error', () => {});
    try {
      keys.push(...(await look.keys('*')));
    } finally {
      look.disconnect();
    }
  }
  return keys;
}

interface Topology {
  url: string;
  /** The ports of the nodes that hold data now. */
  dataPorts(): Promise<number[]>;
  stop(): Promise<void>;
}

const topologies: Array<[string, () => Promise<Topology>]> = [
  [
    'a Redis Cluster of three masters',
    async () => {
      const cluster = await startRedisCluster();
      return {
        url: cluster.url,
        dataPorts: async () => cluster.masters.map((node) => node.port),
        stop: cluster.stop,
      };
    },
  ],
  [
    'a master and its replica behind Sentinel',
    async () => {
      const sentinel = await startRedisSentinel();
      return {
        url: sentinel.url,
        dataPorts: async () => [await sentinel.masterPort()],
        stop: sentinel.stop,
      };
    },
  ],
];

describe('what two replicas share through Redis as platforms run it', () => {
  it.runIf(!hasRedisTools && process.env.CI === 'true')('needs redis-tools in CI', () => {
    expect.fail('.ci/run installs Debian\'s "redis-sentinel" and "redis-tools"');
  });

  describe.skipIf(!hasRedisTools).each(topologies)('through %s', (_, start) => {
    const h = useHarness({ sandbox: { repositoryCacheControl: 'max-age=60' } });
    let topology: Topology;
    const connections: RedisConnection[] = [];
    let a: App;
    let b: App;

    beforeAll(async () => {
      topology = await start();
      const prefix = 'fleet-one:';
      connections.push(
        await connected(topology.url, { keyPrefix: prefix }),
        await connected(topology.url, { keyPrefix: prefix }),
      );
      a = await replica(h, connections[0] as RedisConnection);
      b = await replica(h, connections[1] as RedisConnection);
    }, 60_000);

    afterAll(async () => {
      for (const connection of connections) connection.disconnect();
      await topology?.stop();
    });

    it('counts one caller once across both replicas', async () => {
      const statuses: number[] = [];
      for (const app of [a, b, a, b, a, b])
        statuses.push((await post(app, { query: '{ __typename }' }, 'counted')).status);
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
      expect(connections.every((connection) => connection.available)).toBe(true);
    });

    it('answers an APQ hash on one replica that the other stored', async () => {
      const query = '{ repositories(limit: 1) { total } }';
      const hash = sha256(query);
      expect((await post(a, persisted(hash), 'apq')).body.errors?.[0]?.extensions?.code).toBe(
        'PERSISTED_QUERY_NOT_FOUND',
      );
      expect((await post(a, { query, ...persisted(hash) }, 'apq')).body.errors).toBeUndefined();
      const read = await post(b, persisted(hash), 'apq');
      expect(read.body.errors).toBeUndefined();
      expect(read.body.data).toMatchObject({ repositories: { total: expect.any(Number) } });
    });

    it("serves one replica's kept answer on the other without an upstream call", async () => {
      const caller = { authorization: 'Bearer answers' };
      const first = await postGraphQL(a, LIST, undefined, caller);
      const second = await postGraphQL(b, LIST, undefined, caller);
      expect(first.errors).toBeUndefined();
      expect(second.data).toEqual(first.data);
      expect(second.extensions?.upstreamCalls).toEqual({ calls: [], cache: 'hit' });
      expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(1);
    });

    it('writes every key under its prefix', async () => {
      const keys = await keysOf(await topology.dataPorts());
      expect(keys.some((key) => key.startsWith('fleet-one:rl:'))).toBe(true);
      expect(keys.some((key) => key.startsWith('fleet-one:{apq}:'))).toBe(true);
      expect(keys.some((key) => key.startsWith('fleet-one:{response}:answer:'))).toBe(true);
      expect(keys.filter((key) => !key.startsWith('fleet-one:'))).toEqual([]);
    });
  });
});

describe.skipIf(!hasRedis)('two deployments on one Redis, by their prefixes', () => {
  const h = useHarness({ sandbox: { repositoryCacheControl: 'max-age=60' } });
  let stop: () => Promise<void>;
  let url: string;
  let port: number;
  const connections: RedisConnection[] = [];
  let blue: App;
  let green: App;

  beforeAll(async () => {
    const redis = await startRedis();
    url = redis.url;
    port = Number(new URL(url).port);
    stop = () => stopRedis(redis.process);
    connections.push(
      await connected(url, { keyPrefix: 'blue:' }),
      await connected(url, { keyPrefix: 'green:' }),
    );
    blue = await replica(h, connections[0] as RedisConnection);
    green = await replica(h, connections[1] as RedisConnection);
  }, 30_000);

  afterAll(async () => {
    for (const connection of connections) connection.disconnect();
    await stop?.();
  });

  it('shares no counter, document or answer, and each writes under its own prefix only', async () => {
    for (let i = 0; i < POINTS; i++)
      expect((await post(blue, { query: '{ __typename }' }, 'same')).status).toBe(200);
    expect((await post(blue, { query: '{ __typename }' }, 'same')).status).toBe(429);
    // The same caller on the other deployment has its whole budget.
    expect((await post(green, { query: '{ __typename }' }, 'same')).status).toBe(200);

    const query = '{ repositories(limit: 2) { total } }';
    const hash = sha256(query);
    expect((await post(blue, { query, ...persisted(hash) }, 'apq')).body.errors).toBeUndefined();
    expect((await post(green, persisted(hash), 'apq')).body.errors?.[0]?.extensions?.code).toBe(
      'PERSISTED_QUERY_NOT_FOUND',
    );
    expect((await post(green, { query, ...persisted(hash) }, 'apq')).body.errors).toBeUndefined();

    h.sandbox.clearRequests();
    const caller = { authorization: 'Bearer answers' };
    await postGraphQL(blue, LIST, undefined, caller);
    const other = await postGraphQL(green, LIST, undefined, caller);
    expect(other.extensions?.upstreamCalls).toMatchObject({ cache: 'miss' });
    expect(upstreamRequests(h.sandbox, REPO_ROUTE)).toHaveLength(2);

    const keys = await keysOf([port]);
    const blueKeys = keys.filter((key) => key.startsWith('blue:'));
    const greenKeys = keys.filter((key) => key.startsWith('green:'));
    expect(blueKeys.length + greenKeys.length).toBe(keys.length);
    for (const part of ['rl:', '{apq}:', '{response}:answer:']) {
      expect(blueKeys.some((key) => key.startsWith(`blue:${part}`))).toBe(true);
      expect(greenKeys.some((key) => key.startsWith(`green:${part}`))).toBe(true);
    }
  });
});
