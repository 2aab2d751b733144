import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, failures, hasHaproxy, startFleet, startLoad } from '../helpers/fleet.js';
import { hasRedisTools, type RedisSentinel, startRedisSentinel } from '../helpers/redis.js';

/** What a replica's /readiness says of Redis. */
async function redisSeenBy(url: string): Promise<unknown> {
  const response = await fetch(url.replace(/\/graphql$/, '/readiness'));
  return ((await response.json()) as { redis?: string }).redis;
}

// Three replicas of the production entry on a Redis Sentinel, behind HAProxy health-checking
// /readiness, as deploy/kubernetes/ runs them: restarting the replicas one after another, as a
// rolling update does, and losing the Redis master must cost the callers nothing.
describe('a fleet behind a load balancer', () => {
  it.runIf(!hasHaproxy && process.env.CI === 'true')('needs HAProxy in CI', () => {
    expect.fail('.ci/run installs Debian\'s "haproxy"');
  });

  describe.skipIf(!hasHaproxy || !hasRedisTools)('on a Redis Sentinel', () => {
    let sentinel: RedisSentinel;
    let fleet: Fleet;

    beforeAll(async () => {
      sentinel = await startRedisSentinel();
      fleet = await startFleet({
        redisUrl: sentinel.url,
        sandboxEnv: { SANDBOX_REPOSITORIES: '200' },
        // Short enough for a test, long enough for every request in flight at SIGTERM.
        env: { SHUTDOWN_GRACE_MS: '10000' },
      });
    }, 180_000);
    afterAll(async () => {
      await fleet?.stop();
      await sentinel?.stop();
    }, 30_000);

    it('answers every request through a failover, then every replica uses the new master', async () => {
      for (const replica of fleet.replicas)
        await expect.poll(() => redisSeenBy(replica.url)).toBe('available');
      const load = startLoad(fleet.url, { concurrency: 8, maxMs: 120_000 });
      await expect.poll(() => load.answers.length, { timeout: 20_000 }).toBeGreaterThan(100);
      await sentinel.killMaster();
      for (const replica of fleet.replicas)
        await expect.poll(() => redisSeenBy(replica.url), { timeout: 20_000 }).toBe('available');
      const settled = load.answers.length;
      await expect
        .poll(() => load.answers.length, { timeout: 20_000 })
        .toBeGreaterThan(settled + 100);
      const answers = await load.stop();

      expect(failures(answers)).toEqual([]);
    }, 120_000);

    it('answers every request through a rolling restart of every replica', async () => {
      const load = startLoad(fleet.url, { concurrency: 8, maxMs: 150_000 });
      // The load reaches every replica before the first one goes.
      await expect.poll(() => load.answers.length, { timeout: 20_000 }).toBeGreaterThan(100);
      const before = fleet.replicas.map((replica) => replica.child.pid);
      // Taken out of the balancer before SIGTERM, as a preStop hook does, or sent SIGTERM while
      // the balancer still sends it requests, as a platform without one does.
      for (const [i, replica] of fleet.replicas.entries())
        await fleet.restart(replica, { preStop: i % 2 === 0 });
      const settled = load.answers.length;
      await expect
        .poll(() => load.answers.length, { timeout: 20_000 })
        .toBeGreaterThan(settled + 100);
      const answers = await load.stop();

      expect(failures(answers)).toEqual([]);
      expect(await fleet.states()).toEqual({ r1: 'UP', r2: 'UP', r3: 'UP' });
      for (const [i, replica] of fleet.replicas.entries())
        expect(replica.child.pid).not.toBe(before[i]);
    }, 240_000);
  });
});
