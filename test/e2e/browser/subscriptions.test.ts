import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from '../../helpers/chromium.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { type FacadeProcess, startFacade } from '../../helpers/process.js';

const START_MS = 90_000;
const WAIT_MS = 20_000;

interface Watched {
  events: Array<{ domainDnsCheck?: { host: string; matches: boolean | null } } | null>;
  errors: string[];
  completed: boolean;
}

/** A page of one script on a loopback address; `name` is the host the browser uses for it. */
async function servePage(address: string, name: string, script: string) {
  const server: Server = createServer((req, res) => {
    const isScript = req.url === '/page.js';
    res.writeHead(200, {
      'content-type': isScript ? 'text/javascript; charset=utf-8' : 'text/html; charset=utf-8',
    });
    res.end(
      isScript
        ? script
        : '<!doctype html><html><head><meta charset="utf-8"></head><body><script type="module" src="/page.js"></script></body></html>',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${name}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('subscriptions from web clients in Chromium, cross-origin', () => {
  let dns: TestDnsServer;
  let facade: FacadeProcess | undefined;
  let pages: Array<Awaited<ReturnType<typeof servePage>>> = [];
  let browser: Chromium | undefined;
  let allowed: Page;
  let hostile: Page;

  const start = (page: Page, client: string, name: string, domain: string, code: string) =>
    page.evaluate(
      ({ client, name, url, domain, code }) =>
        (
          globalThis as unknown as {
            watches: Record<string, (name: string, url: string, v: object) => void>;
          }
        ).watches[client]?.(name, url, { domain, code }),
      { client, name, url: facade?.url ?? '', domain, code },
    );
  const watched = (page: Page, name: string) =>
    page.evaluate(
      (name) => (globalThis as unknown as { watched: Record<string, Watched> }).watched[name],
      name,
    );

  beforeAll(async () => {
    dns = await startDnsServer();
    const bundle = await build({
      entryPoints: [join(import.meta.dirname, 'pages', 'subscriptions.ts')],
      bundle: true,
      format: 'esm',
      write: false,
      define: { 'process.env.NODE_ENV': '"production"' },
      logLevel: 'silent',
    });
    const script = bundle.outputFiles[0]?.text ?? '';
    // The allowed page on `localhost`, the facade on 127.0.0.1, a hostile page on 127.0.0.2.
    pages = [
      await servePage('127.0.0.1', 'localhost', script),
      await servePage('127.0.0.2', '127.0.0.2', script),
    ];
    facade = await startFacade(
      {
        CORS_ORIGINS: pages[0]?.origin ?? '',
        DNS_SERVERS: dns.address,
        DNS_WATCH_MIN_INTERVAL_MS: '200',
        DNS_WATCH_MAX_INTERVAL_MS: '400',
      },
      { timeoutMs: START_MS },
    );
    browser = await launchChromium('subscriptions', { timeoutMs: WAIT_MS });
    allowed = browser.page;
    hostile = await browser.context.newPage();
    for (const [page, served] of [
      [allowed, pages[0]],
      [hostile, pages[1]],
    ] as const) {
      await page.goto(`${served?.origin}/`, { waitUntil: 'load' });
      await page.waitForFunction(() => 'watches' in globalThis);
    }
  }, START_MS + WAIT_MS);

  afterAll(async () => {
    await browser?.close();
    await facade?.stop();
    await Promise.all(pages.map((page) => page.close()));
    await dns?.close();
  });

  for (const [client, how] of [
    ['urqlWatch', 'urql with subscriptionExchange over graphql-sse'],
    ['apolloWatch', "Apollo Client's default HttpLink (multipart HTTP)"],
  ] as const) {
    it(`delivers the events to ${how}, then completes`, async () => {
      const domain = `${client.toLowerCase()}.example.com`;
      const host = `_service_custom_hostname.${domain}`;
      await start(allowed, client, client, domain, 'svc-verify-browser');
      await expect
        .poll(async () => (await watched(allowed, client))?.events.length, { timeout: WAIT_MS })
        .toBe(1);
      dns.setTxt(host, ['svc-verify-browser']);
      await expect
        .poll(async () => (await watched(allowed, client))?.completed, { timeout: WAIT_MS })
        .toBe(true);
      const state = await watched(allowed, client);
      expect(state?.errors).toEqual([]);
      expect(state?.events.map((event) => event?.domainDnsCheck)).toEqual([
        expect.objectContaining({ host, matches: false }),
        expect.objectContaining({ host, matches: true }),
      ]);
    });
  }

  it('lets a page on a site that is not allowed subscribe to nothing', async () => {
    const domain = 'hostile.example.com';
    await start(hostile, 'sseWatch', 'hostile', domain, 'x');
    await expect
      .poll(async () => (await watched(hostile, 'hostile'))?.errors.length, { timeout: WAIT_MS })
      .toBe(1);
    expect((await watched(hostile, 'hostile'))?.events).toEqual([]);
    // Refused before the watch: nothing was looked up.
    expect(dns.queriesFor(`_service_custom_hostname.${domain}`)).toEqual([]);
  });
});
