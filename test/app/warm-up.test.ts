import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../sandbox/server.js';
import { loadConfig } from '../../src/config.js';
import { warmUp } from '../../src/process/warm-up.js';

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

  it('warms the request path also where callers are gated (client tokens, trusted documents only)', async () => {
    const sandbox = await startSandbox({ port: 0, repositories: 50 });
    const dir = mkdtempSync(join(tmpdir(), 'warm-up-'));
    try {
      const document = '{ __typename }';
      const manifest = join(dir, 'persisted-documents.json');
      writeFileSync(
        manifest,
        JSON.stringify({ [createHash('sha256').update(document).digest('hex')]: document }),
      );
      const config = loadConfig({
        UPSTREAM_URL: sandbox.url,
        NODE_ENV: 'production',
        UPSTREAM_API_KEY: 'service-key',
        CLIENT_TOKENS: 'client-token',
        PERSISTED_DOCUMENTS: manifest,
        PERSISTED_DOCUMENTS_ONLY: 'true',
      });
      const { requests, failed } = await warmUp(config);
      expect(requests).toBeGreaterThan(0);
      expect(failed).toBe(0);
      expect(sandbox.counts()).toEqual({});
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await sandbox.close();
    }
  }, 20_000);
});
