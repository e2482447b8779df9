/**
 * Debian's Chromium driven by playwright-core, for the status page tests and the screenshot
 * script. Where the browser is missing, tests skip with the install command; where
 * PUSHDRAIN_BROWSER_TESTS=required (CI sets it), a missing browser is a failure instead.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's package; PUSHDRAIN_CHROMIUM points elsewhere (another distribution's path). */
export const CHROMIUM = process.env.PUSHDRAIN_CHROMIUM || '/usr/bin/chromium';
export const INSTALL_COMMAND = 'sudo apt-get update && sudo apt-get install -y chromium';
export const BROWSER_REQUIRED = process.env.PUSHDRAIN_BROWSER_TESTS === 'required';

/** A skip reason for node:test, or false when the browser tests must run. */
export function browserSkip(): string | false {
  if (existsSync(CHROMIUM) || BROWSER_REQUIRED) return false;
  return `Chromium is not installed at ${CHROMIUM}; install it with: ${INSTALL_COMMAND}`;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * A headless Chromium with a fresh profile, removed on close. `ignoreHTTPSErrors`: accept the local
 * issuer's self-signed certificate (the MSAL sign-in test).
 */
export async function launchBrowser(
  viewport = { width: 1280, height: 900 },
  options: { ignoreHTTPSErrors?: boolean } = {},
): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `Chromium is required here (PUSHDRAIN_BROWSER_TESTS=required) but ${CHROMIUM} is missing: ${INSTALL_COMMAND}`,
    );
  const profile = mkdtempSync(join(tmpdir(), 'pushdrain-chromium-'));
  // launchPersistentContext passes --user-data-dir itself: a fresh profile every run.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    ...(options.ignoreHTTPSErrors ? { ignoreHTTPSErrors: true } : {}),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
