import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, failures, hasHaproxy, startFleet, startLoad } from '../helpers/fleet.js';
import { hasRedis } from '../helpers/redis.js';

// Three replicas of the production entry on one Redis, behind HAProxy health-checking /readiness,
// as deploy/kubernetes/ runs them: restarting them one after another, as a rolling update does,
// must cost the callers nothing.
describe.skipIf(!hasRedis || !hasHaproxy)('a fleet behind a load balancer', () => {
  let fleet: Fleet;

  beforeAll(async () => {
    fleet = await startFleet({
      sandboxEnv: { SANDBOX_REPOSITORIES: '200' },
      // Short enough for a test, long enough for every request in flight at SIGTERM.
      env: { SHUTDOWN_GRACE_MS: '10000' },
    });
  }, 120_000);
  afterAll(() => fleet?.stop(), 30_000);

  it.each([
    ['taken out of the balancer before SIGTERM, as a preStop hook does', true],
    ['sent SIGTERM while the balancer still sends them requests', false],
  ])(
    'answers every request through a rolling restart of replicas %s',
    async (_, preStop) => {
      const load = startLoad(fleet.url, { concurrency: 8, maxMs: 150_000 });
      // The load reaches every replica before the first one goes.
      await expect.poll(() => load.answers.length, { timeout: 20_000 }).toBeGreaterThan(100);
      const before = fleet.replicas.map((replica) => replica.child.pid);
      await fleet.rollingRestart({ preStop });
      const settled = load.answers.length;
      await expect
        .poll(() => load.answers.length, { timeout: 20_000 })
        .toBeGreaterThan(settled + 100);
      const answers = await load.stop();

      expect(failures(answers)).toEqual([]);
      expect(await fleet.states()).toEqual({ r1: 'UP', r2: 'UP', r3: 'UP' });
      for (const [i, replica] of fleet.replicas.entries())
        expect(replica.child.pid).not.toBe(before[i]);
    },
    240_000,
  );
});
