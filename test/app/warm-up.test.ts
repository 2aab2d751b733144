import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../sandbox/server.js';
import { loadConfig } from '../../src/config.js';
import { warmUp } from '../../src/process/warm-up.js';

describe('warmUp', () => {
  it('runs every request of its own app without calling the configured upstream', async () => {
    const sandbox = await startSandbox({ port: 0, repositories: 50 });
    // A budget far below the warm-up's requests: its own limiter must refuse none of them.
    const config = loadConfig({
      UPSTREAM_URL: sandbox.url,
      NODE_ENV: 'production',
      RATE_LIMIT_POINTS: '3',
    });
    try {
      const { requests, failed } = await warmUp(config, { durationMs: 10_000, requests: 600 });
      expect(requests).toBe(600);
      expect(failed).toBe(0);
      expect(sandbox.counts()).toEqual({});
    } finally {
      await sandbox.close();
    }
  }, 30_000);

  it('warms the request path also where callers are gated (client tokens, trusted documents only)', async () => {
    const sandbox = await startSandbox({ port: 0, repositories: 50 });
    const dir = mkdtempSync(join(tmpdir(), 'warm-up-'));
    try {
      const documents = [
        '{ __typename }',
        '{ repositories(limit: 3) { total } }',
        // Never sent: a warm-up must not even look like a write.
        'mutation { requestDevServer(input: { repository: "x" }) { id } }',
      ];
      const manifest = join(dir, 'persisted-documents.json');
      writeFileSync(
        manifest,
        JSON.stringify(
          Object.fromEntries(
            documents.map((text) => [createHash('sha256').update(text).digest('hex'), text]),
          ),
        ),
      );
      const config = loadConfig({
        UPSTREAM_URL: sandbox.url,
        NODE_ENV: 'production',
        UPSTREAM_API_KEY: 'service-key',
        CLIENT_TOKENS: 'client-token',
        PERSISTED_DOCUMENTS: manifest,
        PERSISTED_DOCUMENTS_ONLY: 'true',
      });
      const { requests, failed } = await warmUp(config, { durationMs: 10_000, requests: 300 });
      expect(requests).toBe(300);
      expect(failed).toBe(0);
      expect(sandbox.counts()).toEqual({});
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await sandbox.close();
    }
  }, 30_000);

  it('stops at its time bound', async () => {
    const config = loadConfig({ NODE_ENV: 'production' });
    const began = Date.now();
    const { requests } = await warmUp(config, { durationMs: 300 });
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(requests).toBeGreaterThan(0);
    expect(requests).toBeLessThan(20_000);
  }, 30_000);
});
