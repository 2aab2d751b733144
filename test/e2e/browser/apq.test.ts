import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { createServer, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from '../../helpers/chromium.js';
import { freePort } from '../../helpers/net.js';
import { type FacadeProcess, startFacade } from '../../helpers/process.js';

const START_MS = 90_000;
const WAIT_MS = 20_000;

interface Exchange {
  method: string;
  hasQuery: boolean;
  hash: string | undefined;
  code: string | undefined;
}

interface RunResult {
  data: { repositories: { total: number; items: { id: string }[] } } | undefined;
  codes: string[];
  networkError: string | undefined;
}

/** A client's first try of a query: a hash-only GET that misses, then the document sent with it. */
function expectMissThenUpload(miss: Exchange | undefined, upload: Exchange | undefined) {
  expect(miss).toMatchObject({
    method: 'GET',
    hasQuery: false,
    code: 'PERSISTED_QUERY_NOT_FOUND',
  });
  expect(miss?.hash).toMatch(/^[0-9a-f]{64}$/);
  expect(upload).toMatchObject({ hasQuery: true, hash: miss?.hash, code: undefined });
}

/** What a request to /graphql carried: its method, whether it held the text, its APQ hash. */
function describeRequest(method: string, url: URL, body: string | null) {
  const params = body
    ? (JSON.parse(body) as { query?: string; extensions?: unknown })
    : {
        query: url.searchParams.get('query') ?? undefined,
        extensions: JSON.parse(url.searchParams.get('extensions') ?? 'null') as unknown,
      };
  const hash = (params.extensions as { persistedQuery?: { sha256Hash?: string } } | null)
    ?.persistedQuery?.sha256Hash;
  return { method, hasQuery: typeof params.query === 'string', hash };
}

describe('APQ from a browser on another origin: urql and Apollo Client', () => {
  let facade: FacadeProcess | undefined;
  let web: ViteDevServer | undefined;
  let page: Page;
  let browser: Chromium | undefined;
  const exchanges: Exchange[] = [];

  beforeAll(async () => {
    const webPort = await freePort();
    const origin = `http://127.0.0.1:${webPort}`;
    facade = await startFacade(
      { CORS_ORIGINS: origin, SANDBOX_REPOSITORIES: '12' },
      { timeoutMs: START_MS },
    );
    web = await createServer({
      root: join(import.meta.dirname, 'pages', 'apq'),
      configFile: false,
      logLevel: 'warn',
      clearScreen: false,
      define: { FACADE_URL: JSON.stringify(facade.url) },
      server: { port: webPort, host: '127.0.0.1', strictPort: true },
    });
    await web.listen();
    browser = await launchChromium('apq', { timeoutMs: WAIT_MS });
    page = browser.page;
    page.on('response', async (response) => {
      const request = response.request();
      const url = new URL(request.url());
      if (url.pathname !== '/graphql' || request.method() === 'OPTIONS') return;
      const body = (await response.json().catch(() => undefined)) as
        | { errors?: Array<{ extensions?: { code?: string } }> }
        | undefined;
      exchanges.push({
        ...describeRequest(request.method(), url, request.postData()),
        code: body?.errors?.[0]?.extensions?.code,
      });
    });
    await page.goto(origin, { waitUntil: 'load' });
    await page.waitForFunction(() => (globalThis as { ready?: boolean }).ready === true);
  }, START_MS + 60_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await facade?.stop();
  });

  const run = (limit: number, client: 'run' | 'runApollo' = 'run') =>
    page.evaluate(
      ([n, name]) =>
        (globalThis as unknown as Record<string, (n: number) => Promise<RunResult>>)[name]?.(
          n,
        ) as Promise<RunResult>,
      [limit, client] as const,
    );

  it('sends the hash alone, then the document on PERSISTED_QUERY_NOT_FOUND, and gets the data', async () => {
    const result = await run(3);
    expect(result.codes).toEqual([]);
    expect(result.networkError).toBeUndefined();
    expect(result.data?.repositories.items).toHaveLength(3);
    await expect.poll(() => exchanges.length).toBe(2);
    const [miss, upload] = exchanges;
    expectMissThenUpload(miss, upload);
  });

  it('then runs the query by a hash-only GET', async () => {
    exchanges.length = 0;
    const result = await run(5);
    expect(result.codes).toEqual([]);
    expect(result.data?.repositories.items).toHaveLength(5);
    await expect.poll(() => exchanges.length).toBe(1);
    expect(exchanges[0]).toMatchObject({ method: 'GET', hasQuery: false, code: undefined });
  });

  it('works the same with Apollo Client’s persisted-query link (GET for hashed queries)', async () => {
    exchanges.length = 0;
    const first = await run(4, 'runApollo');
    expect(first.codes).toEqual([]);
    expect(first.networkError).toBeUndefined();
    expect(first.data?.repositories.items).toHaveLength(4);
    const second = await run(6, 'runApollo');
    expect(second.data?.repositories.items).toHaveLength(6);
    await expect.poll(() => exchanges.length).toBe(3);
    const [miss, upload, hit] = exchanges;
    expectMissThenUpload(miss, upload);
    expect(hit).toMatchObject({
      method: 'GET',
      hasQuery: false,
      hash: miss?.hash,
      code: undefined,
    });
  });
});
