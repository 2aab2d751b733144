import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { connectRedis, type RedisConnection, type RedisOptions } from '../../src/redis.js';
import { freePort, waitForPort } from './net.js';

/**
 * Whether Debian's `redis-server` is on PATH. Without it the Redis tests are skipped, and the run
 * says so once rather than reporting them as skipped with no reason; CI fails them instead.
 */
export const hasRedis = spawnSync('redis-server', ['--version']).status === 0;

/** Whether Debian's `redis-sentinel` and `redis-cli` (redis-tools) are on PATH too. */
export const hasRedisTools =
  hasRedis &&
  spawnSync('redis-sentinel', ['--version']).status === 0 &&
  spawnSync('redis-cli', ['--version']).status === 0;

if (!hasRedis && process.env.CI !== 'true') {
  process.emitWarning(
    'redis-server is not installed: the Redis tests are skipped (apt-get install redis-server)',
  );
} else if (!hasRedisTools && process.env.CI !== 'true') {
  process.emitWarning(
    'redis-sentinel or redis-cli is not installed: the Redis Cluster and Sentinel tests are skipped (apt-get install redis-sentinel redis-tools)',
  );
}

/** A redis-server of the test's own on a free port, without persistence. */
export async function startRedis(
  args: string[] = [],
): Promise<{ url: string; process: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args],
    { stdio: 'ignore' },
  );
  await waitForPort(port);
  return { url: `redis://127.0.0.1:${port}`, process: child };
}

export async function stopRedis(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  child.kill('SIGKILL');
  await Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(5_000)]);
}

/**
 * The facade's connection, connected, since with no offline queue a command before then fails (and
 * falls back). Its deadline is generous unless a test is about it: a loaded test machine can make
 * a healthy Redis answer late.
 */
export async function connected(
  url: string,
  options: Partial<RedisOptions> = {},
): Promise<RedisConnection> {
  const connection = await connectRedis(url, { timeoutMs: 2_000, ...options });
  if (connection.client.status !== 'ready') await once(connection.client, 'ready');
  return connection;
}

/** A plain connection of the test's own, to look at what the facade keeps: no deadline. */
export async function inspector(url: string): Promise<Redis> {
  const connection = new Redis(url, { maxRetriesPerRequest: 1 });
  connection.on('error', () => {});
  if (connection.status !== 'ready') await once(connection, 'ready');
  return connection;
}

/** INFO memory's used_memory: what Redis's allocator holds. */
export async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
}

const run = promisify(execFile);

/** One `redis-cli` command against a loopback port; its reply as text. */
async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
    timeout: 10_000,
  });
  return stdout.trim();
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const BARE = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];

export interface RedisNode {
  port: number;
  process: ChildProcess;
}

export interface RedisCluster {
  /** `redis-cluster://127.0.0.1:p1,127.0.0.1:p2,…`, every master a seed. */
  url: string;
  masters: RedisNode[];
  replicas: RedisNode[];
  /** SIGKILLs a master; with replicas, resolves once its replica serves its slots. */
  killMaster(index?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of three masters (and one replica each if asked) on free loopback ports, made
 * by `redis-cli --cluster create` as an operator makes one. A short node timeout makes a replica's
 * promotion take a second or two. Every node's bus port is chosen too: the default (port + 10000)
 * can fall outside the port range.
 */
export async function startRedisCluster(
  options: { replicas?: 0 | 1; nodeTimeoutMs?: number } = {},
): Promise<RedisCluster> {
  const replicaCount = options.replicas ?? 0;
  const dir = await mkdtemp(join(tmpdir(), 'redis-cluster-'));
  const nodes: RedisNode[] = [];
  const startNode = async (): Promise<RedisNode> => {
    const port = await freePort();
    const bus = await freePort();
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--cluster-port',
        String(bus),
        ...BARE,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        String(options.nodeTimeoutMs ?? 1_000),
        // A master gone without a replica leaves its slots unserved, not the whole cluster.
        '--cluster-require-full-coverage',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    const node = { port, process: child };
    nodes.push(node);
    await waitForPort(port);
    return node;
  };
  const stop = async () => {
    await Promise.all(nodes.map((node) => stopRedis(node.process)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const all = await Promise.all(
      Array.from({ length: 3 * (1 + replicaCount) }, () => startNode()),
    );
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...all.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        String(replicaCount),
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
    const ok = async (node: RedisNode) =>
      (await cli(node.port, 'cluster', 'info')).includes('cluster_state:ok');
    await until('cluster_state:ok', async () => (await Promise.all(all.map(ok))).every(Boolean));
    const role = async (node: RedisNode) => (await cli(node.port, 'role')).split('\n')[0];
    const roles = await Promise.all(all.map(role));
    const masters = all.filter((_, i) => roles[i] === 'master');
    const replicas = all.filter((_, i) => roles[i] !== 'master');
    if (replicaCount > 0) {
      // Every replica in sync, so that a promotion has the data.
      await until('replicas in sync', async () =>
        (await Promise.all(replicas.map((node) => cli(node.port, 'info', 'replication')))).every(
          (info) => info.includes('master_link_status:up'),
        ),
      );
    }
    return {
      url: `redis-cluster://${masters.map((node) => `127.0.0.1:${node.port}`).join(',')}`,
      masters,
      replicas,
      async killMaster(index = 0) {
        const master = masters[index];
        if (!master) throw new Error(`no master ${index}`);
        const id = await cli(master.port, 'cluster', 'myid');
        const own = await cli(master.port, 'cluster', 'replicas', id);
        const replica = replicas.find((node) => own.includes(`:${node.port}@`));
        await stopRedis(master.process);
        if (!replica) return;
        await until(
          'its replica promoted',
          async () =>
            (await cli(replica.port, 'role')).split('\n')[0] === 'master' && (await ok(replica)),
        );
        masters[index] = replica;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface RedisSentinel {
  /** `redis-sentinel://127.0.0.1:s1,…?sentinelServiceName=NAME`. */
  url: string;
  name: string;
  master: RedisNode;
  replica: RedisNode;
  sentinels: RedisNode[];
  /** The port of the master the sentinels name now. */
  masterPort(): Promise<number>;
  /** SIGKILLs the master; resolves once the sentinels name the promoted replica. */
  killMaster(): Promise<{ port: number }>;
  stop(): Promise<void>;
}

/**
 * A master, its replica and one (or three) `redis-sentinel` on free loopback ports, with a short
 * down-after and failover timeout, so that a killed master is replaced in a few seconds. Resolves
 * once every sentinel knows the replica (and the other sentinels), so that a failover can start.
 */
export async function startRedisSentinel(
  options: { sentinels?: 1 | 3; name?: string; downAfterMs?: number } = {},
): Promise<RedisSentinel> {
  const name = options.name ?? 'facade';
  const count = options.sentinels ?? 1;
  const dir = await mkdtemp(join(tmpdir(), 'redis-sentinel-'));
  const nodes: RedisNode[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((node) => stopRedis(node.process)));
    await rm(dir, { recursive: true, force: true });
  };
  const server = async (args: string[]): Promise<RedisNode> => {
    const port = await freePort();
    // A replica writes what it receives to disk, in its own folder rather than the work tree.
    const child = spawn('redis-server', ['--port', String(port), ...BARE, '--dir', dir, ...args], {
      stdio: 'ignore',
    });
    const node = { port, process: child };
    nodes.push(node);
    await waitForPort(port);
    return node;
  };
  try {
    const master = await server([]);
    const replica = await server(['--replicaof', '127.0.0.1', String(master.port)]);
    await until('the replica in sync', async () =>
      (await cli(replica.port, 'info', 'replication')).includes('master_link_status:up'),
    );
    const quorum = count === 1 ? 1 : 2;
    const sentinels = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const port = await freePort();
        // A sentinel rewrites its configuration file: each its own, writable.
        const file = join(dir, `sentinel-${i}.conf`);
        await writeFile(
          file,
          [
            `port ${port}`,
            'bind 127.0.0.1',
            `dir ${dir}`,
            `sentinel monitor ${name} 127.0.0.1 ${master.port} ${quorum}`,
            `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1_000}`,
            `sentinel failover-timeout ${name} 3000`,
            `sentinel parallel-syncs ${name} 1`,
            '',
          ].join('\n'),
        );
        const child = spawn('redis-sentinel', [file], { stdio: 'ignore' });
        const node = { port, process: child };
        nodes.push(node);
        await waitForPort(port);
        return node;
      }),
    );
    await until('the sentinels to know the replica and each other', async () => {
      const views = await Promise.all(
        sentinels.map(async (sentinel) => ({
          replicas: await cli(sentinel.port, 'sentinel', 'replicas', name),
          others: await cli(sentinel.port, 'sentinel', 'sentinels', name),
        })),
      );
      return views.every(
        (view) =>
          view.replicas.includes(String(replica.port)) &&
          (count === 1 ||
            view.others.split('\n').filter((line) => line === 'name').length === count - 1),
      );
    });
    const masterPort = async () => {
      for (const sentinel of sentinels) {
        const reply = await cli(sentinel.port, 'sentinel', 'get-master-addr-by-name', name).catch(
          () => '',
        );
        const port = Number(reply.split('\n')[1]);
        if (port > 0) return port;
      }
      throw new Error('no sentinel names a master');
    };
    return {
      url: `redis-sentinel://${sentinels.map((node) => `127.0.0.1:${node.port}`).join(',')}?sentinelServiceName=${name}`,
      name,
      master,
      replica,
      sentinels,
      masterPort,
      async killMaster() {
        const before = await masterPort();
        const killed = before === master.port ? master : replica;
        const next = killed === master ? replica : master;
        await stopRedis(killed.process);
        await until(
          'the sentinels to name the new master',
          async () =>
            (await masterPort()) === next.port &&
            (await cli(next.port, 'role')).split('\n')[0] === 'master',
        );
        return { port: next.port };
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
