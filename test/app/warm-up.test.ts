import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../sandbox/server.js';
import { createApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';
import { warmUp } from '../../src/process/warm-up.js';
import { createRateLimiter, divertible } from '../../src/security/use-rate-limit.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { UpstreamClient } from '../../src/upstream/client.js';

/** The serving app as main.ts builds it, with a log that keeps its lines and a real limiter. */
async function servingApp(config: Config, sandbox: Sandbox) {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger('info', {
    // A muted line reaches the destination as '' (pino's streamWrite hook cannot drop a write).
    write: (line: string) => {
      if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  const metrics = createMetrics();
  const client = new UpstreamClient({
    baseUrl: sandbox.url,
    ...config.upstream,
    onCall: (call) => metrics.observeUpstreamCall(call),
  });
  const limiter = await createRateLimiter(config.rateLimit);
  const rateLimiter = limiter && divertible(limiter);
  const app = createApp({ config, client, logger, metrics, rateLimiter });
  return {
    app,
    lines,
    target: { app, client, logger, metrics, rateLimiter },
    close: async () => {
      await client.close();
      await rateLimiter?.close();
    },
  };
}

const LIST = '{ repositories(limit: 2) { total items { id } } }';
const post = (app: ReturnType<typeof createApp>, headers: Record<string, string> = {}) =>
  app.fetch('http://facade/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: LIST }),
  });

describe('warmUp', () => {
  it('runs the serving app without calling the upstream, and leaves no trace of it', async () => {
    const sandbox = await startSandbox({ port: 0, repositories: 50 });
    // A budget far below the warm-up's requests: none of them may take a point from it.
    const config = loadConfig({
      UPSTREAM_URL: sandbox.url,
      NODE_ENV: 'production',
      RATE_LIMIT_POINTS: '3',
    });
    const serving = await servingApp(config, sandbox);
    try {
      const { requests, failed } = await warmUp(config, serving.target, {
        durationMs: 10_000,
        requests: 600,
      });
      expect(requests).toBe(600);
      expect(failed).toBe(0);
      // Not one call reached the configured upstream.
      expect(sandbox.counts()).toEqual({});
      // No request line, and none of its traffic in the metrics.
      expect(serving.lines.filter((line) => line.msg === 'request')).toEqual([]);
      const metrics = await serving.target.metrics.registry.metrics();
      expect(metrics).not.toMatch(/^graphql_envelop_request_duration_count\{/m);
      expect(metrics).not.toMatch(/^upstream_calls_total\{/m);
      expect(serving.target.logger.level).toBe('info');

      // Afterwards: the real upstream again, a request line, its metrics, the whole budget.
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await post(serving.app)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect(sandbox.counts()).toEqual({ 'GET /git/v1/repo': 3 });
      expect(serving.lines.filter((line) => line.msg === 'request')).toHaveLength(4);
      expect(await serving.target.metrics.registry.metrics()).toMatch(
        /^upstream_calls_total\{route="GET \/git\/v1\/repo",status="200"\} 3$/m,
      );
    } finally {
      await serving.close();
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
      const serving = await servingApp(config, sandbox);
      try {
        const { requests, failed } = await warmUp(config, serving.target, {
          durationMs: 10_000,
          requests: 300,
        });
        expect(requests).toBe(300);
        expect(failed).toBe(0);
        expect(sandbox.counts()).toEqual({});
        // The gates are still closed to a caller without the token.
        expect((await post(serving.app)).status).not.toBe(200);
      } finally {
        await serving.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await sandbox.close();
    }
  }, 30_000);

  it('stops at its time bound', async () => {
    const sandbox = await startSandbox({ port: 0, repositories: 50 });
    const config = loadConfig({ UPSTREAM_URL: sandbox.url, NODE_ENV: 'production' });
    const serving = await servingApp(config, sandbox);
    try {
      const began = Date.now();
      const { requests } = await warmUp(config, serving.target, { durationMs: 300 });
      expect(Date.now() - began).toBeLessThan(5_000);
      expect(requests).toBeGreaterThan(0);
      expect(requests).toBeLessThan(20_000);
    } finally {
      await serving.close();
      await sandbox.close();
    }
  }, 30_000);
});
