import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from '../../helpers/chromium.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { type FacadeProcess, startFacade } from '../../helpers/process.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');
const START_MS = 90_000;
const WAIT_MS = 20_000;

/** The result pane's rendered lines (Monaco renders spaces as no-break spaces). */
const resultText = (page: Page) =>
  page
    .locator('.result-window')
    .textContent()
    .then((text) => (text ?? '').replaceAll('\u00a0', ' '));

/** The query editor's rendered text. */
const queryText = (page: Page) =>
  page
    .locator('.graphiql-query-editor .view-lines')
    .first()
    .textContent()
    .then((text) => (text ?? '').replaceAll('\u00a0', ' '));

async function waitForResult(page: Page, expected: string): Promise<string> {
  await page.waitForFunction(
    (needle) =>
      document
        .querySelector<HTMLElement>('.result-window')
        ?.textContent?.replaceAll('\u00a0', ' ')
        .includes(needle),
    expected,
    { timeout: WAIT_MS },
  );
  return resultText(page);
}

/**
 * Replaces the active tab's operation: select all, then insert one line at once (typed keys or
 * newlines would let the editor auto-close brackets and indent).
 */
async function replaceQuery(page: Page, query: string): Promise<void> {
  await page.locator('.graphiql-query-editor .monaco-editor').first().click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(query);
  // Laid out on several lines by GraphiQL itself, so the screenshot shows the whole operation.
  await page.getByRole('button', { name: /prettify/i }).click();
  await page.locator('.graphiql-query-editor .monaco-editor').first().click();
  await page.keyboard.press('ControlOrMeta+Home');
}

describe('GraphiQL in Chromium', () => {
  let facade: FacadeProcess | undefined;
  let page: Page;
  let browser: Chromium | undefined;
  let sandboxUrl: string;
  let dns: TestDnsServer | undefined;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    // The watch tab's look-ups stay on the machine.
    dns = await startDnsServer();
    facade = await startFacade({ DNS_SERVERS: dns.address }, { timeoutMs: START_MS });
    sandboxUrl = facade.sandboxUrl ?? '';
    browser = await launchChromium('graphiql', {
      timeoutMs: WAIT_MS,
      viewport: { width: 1400, height: 900 },
    });
    page = browser.page;
    await page.goto(facade.url, { waitUntil: 'load' });
    await page.locator('.graphiql-execute-button').waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    await facade?.stop();
    await dns?.close();
  });

  // First in the file: the browser has no stored tab state yet, as on a newcomer's first visit.
  it('switches between the example tabs with the mouse on a first visit', async () => {
    const titles = await page.locator('.graphiql-tab-button').allTextContents();
    expect(titles).toEqual([
      'Repositories',
      'RepositoriesConnection',
      'CreateDomainVerification',
      'DomainDnsCheck',
      'WatchDomainDns',
      'VerifyDomain',
      'RequestDevServer',
    ]);
    // Every tab but the last (which has no sibling after it), then back to the first.
    for (const title of [...titles.slice(1, -1).reverse(), titles[0] as string]) {
      await page.locator('.graphiql-tab-button', { hasText: new RegExp(`^${title}$`) }).click();
      await expect
        .poll(() => queryText(page), { timeout: WAIT_MS })
        .toMatch(new RegExp(`(query|mutation|subscription) ${title}\\(`));
      expect(await page.locator('.graphiql-tab-active .graphiql-tab-button').textContent()).toBe(
        title,
      );
    }
  });

  it('runs the example query with the run button and shows repositories from the sandbox', async () => {
    await page.locator('.graphiql-tab-button', { hasText: /^Repositories$/ }).click();
    await page.locator('.graphiql-execute-button').click();
    const shown = await waitForResult(page, '"repositories"');
    await page.screenshot({ path: join(ARTIFACTS, 'graphiql-query.png') });

    // The same first page, straight from the sandbox (no Authorization: GraphiQL sends none either).
    const response = await fetch(`${sandboxUrl}/git/v1/repo?limit=5&offset=0`, {
      signal: AbortSignal.timeout(WAIT_MS),
    });
    const wire = (await response.json()) as { total: number; repositories: Array<{ id: string }> };
    expect(shown).toContain(`"total": ${wire.total}`);
    expect(shown).toContain(`"id": "${wire.repositories[0]?.id}"`);
    expect(shown).not.toContain('"errors"');
  });

  it("watches the example domain's record from its tab, over server-sent events", async () => {
    dns?.setTxt('_service_custom_hostname.example.com', ['svc-verify-example']);
    await page.locator('.graphiql-tab-button', { hasText: /^WatchDomainDns$/ }).click();
    await page.locator('.graphiql-execute-button').click();
    const shown = await waitForResult(page, '"matches": true');
    await page.screenshot({ path: join(ARTIFACTS, 'graphiql-subscription.png') });
    expect(shown).toContain('"host": "_service_custom_hostname.example.com"');
    expect(shown).not.toContain('"errors"');
  });

  it('shows a validation error of a mutation with the path of the offending value', async () => {
    await page.locator('.graphiql-tab-add').click();
    await replaceQuery(
      page,
      'mutation BadPort { requestDevServer(input: { ports: [{ port: 80, targetPort: 3000 }] }) { ephemeralUrl } }',
    );
    await page.locator('.graphiql-execute-button').click();
    const shown = await waitForResult(page, '"errors"');
    await page.screenshot({ path: join(ARTIFACTS, 'graphiql-validation-error.png') });
    expect(shown).toContain('input.ports[0].port');
    expect(shown).toContain('"code": "BAD_USER_INPUT"');

    // Checked before any upstream call: the sandbox never saw a dev-server request.
    const log = await fetch(`${sandboxUrl}/__sandbox/requests`, {
      signal: AbortSignal.timeout(WAIT_MS),
    });
    const { requests } = (await log.json()) as {
      requests: Array<{ method: string; path: string }>;
    };
    expect(requests.filter((r) => r.path === '/ephemeral/v1/dev-servers')).toEqual([]);
  });
});
