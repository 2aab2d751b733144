import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/** Debian's Chromium, which `.ci/run` installs when it is missing. */
const CHROMIUM = '/usr/bin/chromium';

export interface Chromium {
  context: BrowserContext;
  /** The first tab, as a newcomer's browser opens it. */
  page: Page;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/**
 * Headless Chromium with a fresh profile of its own (no stored tabs, cookies or cache), its
 * background services off so the only network traffic is the test's, and `timeoutMs` as the
 * default for every wait.
 */
export async function launchChromium(
  name: string,
  options: { timeoutMs: number; viewport?: { width: number; height: number } },
): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), `${name}-chromium-`));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    ...(options.viewport ? { viewport: options.viewport } : {}),
    timeout: options.timeoutMs,
  });
  context.setDefaultTimeout(options.timeoutMs);
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    close: async () => {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
