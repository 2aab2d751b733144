import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../src/redis.js';
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

/** Connected, since with no offline queue a command before then fails (and falls back). */
export async function connected(url: string): Promise<Redis> {
  const connection = await connectRedis(url);
  if (connection.status !== 'ready') await once(connection, 'ready');
  return connection;
}
