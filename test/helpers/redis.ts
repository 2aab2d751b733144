import { spawnSync } from 'node:child_process';

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
