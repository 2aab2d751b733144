import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { connectRedis, type RedisConnection, type RedisOptions } from '../../src/redis.js';
import { freePort, waitForPort } from './net.js';

/**
 * Whether Debian's `redis-server` is on PATH. Without it the Redis tests are skipped, and the run
 * says so once rather than reporting them as skipped with no reason; CI fails them instead.
 */
export const hasRedis = spawnSync('redis-server', ['--version']).status === 0;

if (!hasRedis && process.env.CI !== 'true') {
  process.emitWarning(
    'redis-server is not installed: the Redis tests are skipped (apt-get install redis-server)',
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
