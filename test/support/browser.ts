/**
 * A headless Chromium driven by playwright-core, for the status page tests and the screenshot
 * script: the system's where there is one (PUSHDRAIN_CHROMIUM, else Debian's /usr/bin/chromium),
 * else the one `npm install` brought (./bundled-chromium.ts, Linux x64). Where neither can run,
 * tests skip with one line saying what to install; where PUSHDRAIN_BROWSER_TESTS=required (CI sets
 * it), a missing browser is a failure instead.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { type BrowserContext, chromium } from 'playwright-core';

import { bundledChromium, bundledChromiumAvailable } from './bundled-chromium';

/** A browser of the machine's own: PUSHDRAIN_CHROMIUM, or Debian's package. */
const SYSTEM_CHROMIUM = process.env.PUSHDRAIN_CHROMIUM || '/usr/bin/chromium';
const INSTALL_HINT =
  'no Chromium for this platform: @sparticuz/chromium (a dev dependency) ships Linux x64 only; install one ' +
  '(Debian: sudo apt-get install -y chromium) or set PUSHDRAIN_CHROMIUM to its executable';
const BROWSER_REQUIRED = process.env.PUSHDRAIN_BROWSER_TESTS === 'required';

const systemChromium = (): boolean => existsSync(SYSTEM_CHROMIUM);

/** A skip reason for node:test, or false when the browser tests must run. */
export function browserSkip(): string | false {
  if (systemChromium() || bundledChromiumAvailable() || BROWSER_REQUIRED) return false;
  return INSTALL_HINT;
}

/** Which browser a launch uses, and the environment it needs. */
async function pickChromium(): Promise<{ executablePath: string; env?: Record<string, string> }> {
  if (systemChromium()) return { executablePath: SYSTEM_CHROMIUM };
  if (bundledChromiumAvailable()) {
    const bundled = await bundledChromium();
    return { executablePath: bundled.executablePath, env: { ...processEnv(), ...bundled.env } };
  }
  throw new Error(`Chromium is required here (PUSHDRAIN_BROWSER_TESTS=required): ${INSTALL_HINT}`);
}

const processEnv = (): Record<string, string> =>
  Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));

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
  const browser = await pickChromium();
  const profile = mkdtempSync(join(tmpdir(), 'pushdrain-chromium-'));
  // launchPersistentContext passes --user-data-dir itself: a fresh profile every run.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: browser.executablePath,
    ...(browser.env ? { env: browser.env } : {}),
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
