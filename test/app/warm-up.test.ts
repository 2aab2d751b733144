import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../sandbox/server.js';
import { loadConfig } from '../../src/config.js';
import { warmUp } from '../../src/warm-up.js';

describe('warmUp', () => {
  it('answers every warm-up operation without calling the configured upstream', async () => {
    const sandbox = await startSandbox({ port: 0, repositories: 50 });
    try {
      const config = loadConfig({ UPSTREAM_URL: sandbox.url, NODE_ENV: 'production' });
      const { requests, failed } = await warmUp(config);
      expect(requests).toBeGreaterThan(0);
      expect(failed).toBe(0);
      expect(sandbox.counts()).toEqual({});
    } finally {
      await sandbox.close();
    }
  }, 20_000);
});
