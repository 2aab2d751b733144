import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExampleServer, startExampleServer } from '../../../examples/web/server.js';
import { type Chromium, launchChromium } from '../../helpers/chromium.js';
import { freePort } from '../../helpers/net.js';
import { type FacadeProcess, startFacade } from '../../helpers/process.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');
const MANIFEST = join(
  import.meta.dirname,
  '..',
  '..',
  '..',
  'examples/web/src/gql/persisted-documents.json',
);
const START_MS = 90_000;
const WAIT_MS = 20_000;

/** The GraphQL requests the page sent, as the facade received them. */
interface Sent {
  method: string;
  url: URL;
  body: Record<string, unknown> | undefined;
}

describe('the example frontend (examples/web) in Chromium, PERSISTED_DOCUMENTS_ONLY=true', () => {
  let facade: FacadeProcess | undefined;
  let web: ExampleServer | undefined;
  let page: Page;
  let browser: Chromium | undefined;
  const sent: Sent[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    // The page's own origin, on another port than the facade's: every call is cross-origin.
    const webPort = await freePort();
    const origin = `http://127.0.0.1:${webPort}`;
    facade = await startFacade(
      {
        PERSISTED_DOCUMENTS: MANIFEST,
        PERSISTED_DOCUMENTS_ONLY: 'true',
        CORS_ORIGINS: origin,
        SANDBOX_REPOSITORIES: '12',
        // No DNS look-up leaves the machine: a resolver that does not answer.
        DNS_SERVERS: '127.0.0.1:9',
        DNS_TIMEOUT_MS: '500',
      },
      { timeoutMs: START_MS },
    );
    web = await startExampleServer({ facadeUrl: facade.url, port: webPort, host: '127.0.0.1' });
    browser = await launchChromium('example-web', {
      timeoutMs: WAIT_MS,
      viewport: { width: 1200, height: 900 },
    });
    page = browser.page;
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname !== '/graphql' || request.method() === 'OPTIONS') return;
      const data = request.postData();
      sent.push({
        method: request.method(),
        url,
        body: data ? (JSON.parse(data) as Record<string, unknown>) : undefined,
      });
    });
    await page.goto(web.origin, { waitUntil: 'load' });
  }, START_MS + 60_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await facade?.stop();
  });

  it('lists the first page of repositories, sent as a hash-only GET', async () => {
    const info = page.getByTestId('page-info');
    await expect
      .poll(() => info.textContent(), { timeout: WAIT_MS })
      .toBe('Repositories 1–5 of 12');
    expect(await page.getByTestId('repositories').locator('tr').count()).toBe(5);
    expect(await page.getByTestId('errors').locator('li').count()).toBe(0);
    const [first] = sent;
    expect(first?.method).toBe('GET');
    expect(first?.url.searchParams.has('query')).toBe(false);
    expect(JSON.parse(first?.url.searchParams.get('extensions') ?? '{}')).toMatchObject({
      persistedQuery: { version: 1, sha256Hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) },
    });
    await page.screenshot({ path: join(ARTIFACTS, 'example-web-first-page.png') });
  });

  it('pages forward to the last page and back', async () => {
    const info = page.getByTestId('page-info');
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => info.textContent()).toBe('Repositories 6–10 of 12');
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => info.textContent()).toBe('Repositories 11–12 of 12');
    expect(await page.getByTestId('repositories').locator('tr').count()).toBe(2);
    expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Previous' }).click();
    await expect.poll(() => info.textContent()).toBe('Repositories 6–10 of 12');
  });

  it('creates a domain verification and watches its DNS record', async () => {
    await page.getByLabel('Domain').fill('shop.example.com');
    await page.getByRole('button', { name: 'Create verification' }).click();
    const verification = page.getByTestId('verification');
    await expect
      .poll(() => verification.textContent())
      .toMatch(/^Publish TXT _service_custom_hostname\.shop\.example\.com "[^"]+"$/);
    const mutation = sent.at(-1);
    // A mutation goes as a POST, with its hash and no text.
    expect(mutation?.method).toBe('POST');
    expect(mutation?.body?.query).toBeUndefined();
    await page.getByRole('button', { name: 'Watch DNS' }).click();
    // The subscription's first event.
    await expect
      .poll(() => verification.textContent())
      .toMatch(/^DNS at _service_custom_hostname\.shop\.example\.com: /);
    const watch = sent.at(-1);
    expect(watch?.method).toBe('POST');
    expect(watch?.body?.extensions).toMatchObject({ persistedQuery: { version: 1 } });
    expect(await page.getByTestId('errors').locator('li').count()).toBe(0);
  });

  it('shows an error by its contract code', async () => {
    await page.getByLabel('Domain').fill('not a domain');
    await page.getByRole('button', { name: 'Create verification' }).click();
    const error = page.getByTestId('errors').locator('li').first();
    await expect.poll(() => error.getAttribute('data-code')).toBe('BAD_USER_INPUT');
    expect(await error.textContent()).toMatch(/^BAD_USER_INPUT: Invalid input: input\.domain/);
    await page.screenshot({ path: join(ARTIFACTS, 'example-web-error.png') });
  });

  it('sent no document text: every operation ran from the manifest', () => {
    expect(sent.length).toBeGreaterThanOrEqual(6);
    for (const request of sent) {
      expect(request.url.searchParams.has('query')).toBe(false);
      expect(request.body?.query).toBeUndefined();
    }
  });
});
