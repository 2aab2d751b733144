import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from '../../helpers/chromium.js';
import { type FacadeProcess, startFacade } from '../../helpers/process.js';

const START_MS = 90_000;
const WAIT_MS = 20_000;

interface Served {
  /** The page's origin as the browser sees it. */
  origin: string;
  close(): Promise<void>;
}

/** A static page server on a loopback address; `name` is the host the browser uses for it. */
async function servePages(
  address: string,
  name: string,
  pages: Record<string, { type: string; body: string }>,
): Promise<Served> {
  const server: Server = createServer((req, res) => {
    const page = pages[new URL(req.url ?? '/', 'http://x').pathname];
    res.writeHead(page ? 200 : 404, { 'content-type': page?.type ?? 'text/plain' });
    res.end(page?.body ?? 'not found');
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

const html = (body: string) => ({
  type: 'text/html; charset=utf-8',
  body: `<!doctype html><html><head><meta charset="utf-8"></head><body>${body}</body></html>`,
});

/**
 * What a hostile page can do without asking the facade: two form POSTs, an <img> and a <script>
 * GET, and `fetch` in no-cors mode (GET and text/plain POST); then a cors `fetch`, which may not
 * read the answer. Each step is awaited (load, error or a bound), so all were sent.
 */
function hostilePage(facade: string): string {
  const query = '{ repositories(limit: 1) { total } }';
  return `
<iframe name="a"></iframe><iframe name="b"></iframe>
<form id="urlencoded" method="POST" target="a" action="${facade}">
  <input name="query" value="${query}">
</form>
<form id="plain" method="POST" target="b" action="${facade}" enctype="text/plain">
  <input name='{"query":"${query}","x":"' value='"}'>
</form>
<script>
const facade = ${JSON.stringify(facade)};
const get = facade + '?query=' + encodeURIComponent(${JSON.stringify(query)});
const bounded = (promise) => Promise.race([promise, new Promise((r) => setTimeout(r, 5000))]);
const loaded = (element) => new Promise((resolve) => { element.onload = element.onerror = resolve; });
window.done = (async () => {
  const outcomes = {};
  for (const id of ['urlencoded', 'plain']) {
    const form = document.getElementById(id);
    const frame = document.querySelector('iframe[name="' + form.target + '"]');
    const submitted = loaded(frame);
    form.submit();
    await bounded(submitted);
  }
  const img = new Image();
  const imgDone = loaded(img);
  img.src = get + '&img=1';
  await bounded(imgDone);
  const script = document.createElement('script');
  const scriptDone = loaded(script);
  script.src = get + '&script=1';
  document.body.append(script);
  await bounded(scriptDone);
  outcomes.noCorsGet = (await fetch(get + '&nocors=1', { mode: 'no-cors' })).type;
  outcomes.noCorsPost = (await fetch(facade, {
    method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' },
    body: JSON.stringify({ query: ${JSON.stringify(query)} }),
  })).type;
  try {
    await (await fetch(get + '&cors=1')).text();
    outcomes.corsGet = 'read';
  } catch {
    outcomes.corsGet = 'not readable';
  }
  return outcomes;
})();
</script>`;
}

describe('web clients in Chromium, cross-origin', () => {
  let facade: FacadeProcess | undefined;
  let app: Served | undefined;
  let hostile: Served | undefined;
  let context: BrowserContext | undefined;
  let browser: Chromium | undefined;
  let page: Page;
  /** Every request the page sends to the facade: method and URL. */
  const sent: Array<{ method: string; url: string }> = [];

  const upstreamCalls = async () => {
    const response = await fetch(`${facade?.sandboxUrl}/__sandbox/counts`);
    const { counts } = (await response.json()) as { counts: Record<string, number> };
    return Object.values(counts).reduce((sum, count) => sum + count, 0);
  };
  const facadeUrl = () => facade?.url ?? '';

  beforeAll(async () => {
    const bundle = await build({
      entryPoints: [join(import.meta.dirname, 'pages', 'clients.ts')],
      bundle: true,
      format: 'esm',
      write: false,
      define: { 'process.env.NODE_ENV': '"production"' },
      logLevel: 'silent',
    });
    // The allowed page is on `localhost`, the facade on 127.0.0.1 and the hostile page on
    // 127.0.0.2: three origins, each a site of its own.
    app = await servePages('127.0.0.1', 'localhost', {
      '/': html('<script type="module" src="/clients.js"></script>'),
      '/clients.js': {
        type: 'text/javascript; charset=utf-8',
        body: bundle.outputFiles[0]?.text ?? '',
      },
    });
    facade = await startFacade({ CORS_ORIGINS: app.origin }, { timeoutMs: START_MS });
    const hostileHtml = html(hostilePage(facade.url));
    hostile = await servePages('127.0.0.2', '127.0.0.2', { '/': hostileHtml });

    browser = await launchChromium('clients', { timeoutMs: WAIT_MS });
    ({ context, page } = browser);
    context.on('request', (request) => {
      if (request.url().startsWith(facadeUrl()))
        sent.push({ method: request.method(), url: request.url() });
    });
    await page.goto(`${app.origin}/`, { waitUntil: 'load' });
    await page.waitForFunction(() => 'clients' in globalThis);
  });

  afterAll(async () => {
    await browser?.close();
    await facade?.stop();
    await app?.close();
    await hostile?.close();
  });

  it("queries repositories with urql's defaults: a GET, no extra header", async () => {
    sent.length = 0;
    const before = await upstreamCalls();
    const outcome = await page.evaluate(
      (url) =>
        (
          globalThis as unknown as {
            clients: { urqlQuery(url: string): Promise<{ data?: unknown; error?: string }> };
          }
        ).clients.urqlQuery(url),
      facadeUrl(),
    );
    expect(outcome.error).toBeUndefined();
    expect(outcome.data).toMatchObject({ repositories: { total: 50 } });
    expect(sent.map((request) => request.method)).toEqual(['GET']);
    expect(await upstreamCalls()).toBe(before + 1);
  });

  it("queries repositories with Apollo Client's defaults (HttpLink, POST)", async () => {
    sent.length = 0;
    const outcome = await page.evaluate(
      (url) =>
        (
          globalThis as unknown as {
            clients: { apolloQuery(url: string): Promise<{ data?: unknown; error?: string }> };
          }
        ).clients.apolloQuery(url),
      facadeUrl(),
    );
    expect(outcome.error).toBeUndefined();
    expect(outcome.data).toMatchObject({ repositories: { total: 50 } });
    expect(sent.map((request) => request.method)).toContain('POST');
  });

  it('delivers a deferred part to urql after the first', async () => {
    const outcomes = await page.evaluate(
      ({ url, query }) =>
        (
          globalThis as unknown as {
            clients: {
              urqlDefer(
                url: string,
                query: string,
              ): Promise<Array<{ data?: Record<string, unknown>; error?: string }>>;
            };
          }
        ).clients.urqlDefer(url, query),
      {
        url: facadeUrl(),
        query: `{
          repositories(limit: 2) { total }
          ... @defer { more: repositories(limit: 2, offset: 2) { items { id } } }
        }`,
      },
    );
    expect(outcomes.length).toBeGreaterThanOrEqual(2);
    expect(outcomes[0]?.error).toBeUndefined();
    expect(outcomes[0]?.data).toMatchObject({ repositories: { total: 50 } });
    expect(outcomes[0]?.data).not.toHaveProperty('more');
    expect(outcomes.at(-1)?.data).toMatchObject({
      repositories: { total: 50 },
      more: { items: [{ id: expect.any(String) }, { id: expect.any(String) }] },
    });
  });

  it('lets a page on a site that is not allowed cause no upstream call and read nothing', async () => {
    const before = await upstreamCalls();
    sent.length = 0;
    const refusedBefore = facade?.lines.filter((line) => line.status === 403).length ?? 0;
    const hostilePageTab = await context?.newPage();
    if (!hostilePageTab || !hostile) throw new Error('no browser');
    await hostilePageTab.goto(`${hostile.origin}/`, { waitUntil: 'load' });
    const outcomes = await hostilePageTab.evaluate(
      () => (globalThis as unknown as { done: Promise<Record<string, string>> }).done,
    );
    await hostilePageTab.close();
    expect(outcomes).toEqual({
      noCorsGet: 'opaque',
      noCorsPost: 'opaque',
      corsGet: 'not readable',
    });
    // Every request reached the facade and was refused there; none reached the upstream.
    expect(sent.length).toBeGreaterThanOrEqual(7);
    await expect
      .poll(() => (facade?.lines.filter((line) => line.status === 403).length ?? 0) - refusedBefore)
      .toBe(sent.length);
    expect(await upstreamCalls()).toBe(before);
  });
});
