/**
 * The status page signs in with MSAL (authorization code flow with PKCE), in headless Chromium,
 * against the local issuer's OpenID Connect endpoints (tools/devstack/dev-sign-in.ts): the page
 * MSAL runs on is the one Azure serves, with the app's CSP, configured from the served JSON block.
 * A submitter sees its own batches and nobody else's; a reader gets the status report, no redrive.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { Page } from 'playwright-core';

import type { Role } from '../../shared/auth/principal';
import { type Browser, browserSkip, launchBrowser } from '../support/browser';
import { type LocalStack, startLocalStack } from '../support/local-stack';
import { submitSample } from '../support/sample-batch';
import { type TestIssuer, testIssuer } from '../support/tokens';

interface El {
  textContent: string | null;
  hidden: boolean;
}
declare const document: { querySelector(selector: string): El | null; querySelectorAll(s: string): El[] };

const skip = browserSkip();
const WAIT = { timeout: 30_000, polling: 100 };

describe('status page sign-in with MSAL against the local issuer', () => {
  let iss: TestIssuer;
  let stack: LocalStack;
  let browser: Browser;
  const problems: string[] = [];
  const tokenRequests: string[] = [];

  before(async () => {
    if (skip) return;
    browser = await launchBrowser(undefined, { ignoreHTTPSErrors: true });
    iss = await testIssuer();
    stack = await startLocalStack(iss.env);
  });

  after(async () => {
    await browser?.close();
    await stack?.stop();
    await iss?.close();
  });

  const submitAs = async (name: string): Promise<string> =>
    submitSample(stack.host.base, await iss.token(name, ['Batches.Submit']));

  /** Opens the page, clicks "Sign in with Microsoft", signs in at the issuer, and comes back signed in. */
  async function signIn(name: string, roles: Role[]): Promise<Page> {
    const page = await browser.context.newPage();
    // Expected: the status read before sign-in (401).
    page.on('console', (m) =>
      m.type() === 'error' && !/status of 401/.test(m.text()) ? problems.push(`${name}: ${m.text()}`) : undefined,
    );
    page.on('pageerror', (e) => problems.push(`${name}: ${e.message}`));
    page.on('request', (r) => {
      if (r.url().includes('/oauth2/v2.0/token')) tokenRequests.push(r.postData() ?? '');
    });
    const res = await page.goto(`${stack.host.base}/api/dashboard`);
    assert.equal(res?.status(), 200);
    await page.waitForSelector('#msal-sign-in:not([hidden])', WAIT);
    await page.click('#msal-sign-in');
    await page
      .waitForURL((u) => u.pathname.endsWith('/oauth2/v2.0/authorize'), WAIT)
      .catch(async (e: Error) => {
        throw new Error(`no redirect to the issuer; the page says: ${await page.textContent('#error')}`, { cause: e });
      });
    const authorize = new URL(page.url());
    assert.equal(authorize.protocol, 'https:');
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256', 'PKCE');
    assert.equal(authorize.searchParams.get('redirect_uri'), `${stack.host.base}/api/dashboard`);
    await page.fill('#dev-name', name);
    for (const r of roles) await page.check(`input[name=dev_role][value="${r}"]`);
    await page.click('#dev-approve');
    await page.waitForFunction((n) => (document.querySelector('#who')?.textContent ?? '').includes(n), name, WAIT);
    assert.ok(!page.url().includes('code='), 'the code left the address bar');
    return page;
  }

  test(
    'a submitter signs in with MSAL and sees its own batches only, no status report and no redrive',
    { skip },
    async () => {
      const mine = await submitAs('alice');
      const theirs = await submitAs('bob');
      const page = await signIn('alice', ['Batches.Submit']);
      assert.equal(await page.textContent('#who'), 'signed in as alice (Batches.Submit)');
      await page.waitForSelector(`#my-batches tr[data-batch="${mine}"]`, WAIT);
      const rows = page.locator('#my-batches tbody tr');
      const listed: (string | null)[] = [];
      for (let i = 0; i < (await rows.count()); i++) listed.push(await rows.nth(i).getAttribute('data-batch'));
      assert.deepEqual(listed, [mine], 'her batch, not bob’s');
      assert.ok(!listed.includes(theirs));
      for (const s of ['#tiles', '#redrive-form', '#dead-letter-form', '#queues', '#recent-batches'])
        assert.ok(await page.isHidden(s), `${s} is hidden for a submitter`);
      const verifier = new URLSearchParams(tokenRequests.at(-1));
      assert.equal(verifier.get('grant_type'), 'authorization_code');
      assert.match(verifier.get('code_verifier') ?? '', /^[A-Za-z0-9_-]{43,128}$/, 'PKCE verifier sent');
      // A reload keeps the tab signed in (MSAL's cache), without another trip to the issuer.
      await page.reload();
      await page.waitForFunction(
        () => (document.querySelector('#who')?.textContent ?? '').includes('alice'),
        null,
        WAIT,
      );
      assert.ok(!page.url().includes('/oauth2/'));
      await page.waitForSelector(`#my-batches tr[data-batch="${mine}"]`, WAIT);
      await page.close();
    },
  );

  test(
    'signing out ends the session at the issuer, comes back to the page signed out, and a reload stays so',
    { skip },
    async () => {
      const page = await signIn('alice', ['Batches.Submit']);
      const logouts: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('/oauth2/v2.0/logout')) logouts.push(r.url());
      });
      assert.ok(await page.isVisible('#sign-out'));
      await page.click('#sign-out');
      await page.waitForURL((u) => u.pathname.endsWith('/api/dashboard') && logouts.length > 0, WAIT);
      await page.waitForSelector('#msal-sign-in:not([hidden])', WAIT);
      const back = new URL(logouts[0] ?? '').searchParams.get('post_logout_redirect_uri');
      assert.equal(back, `${stack.host.base}/api/dashboard`);
      assert.equal(await page.textContent('#who'), '');
      assert.ok(await page.isHidden('#sign-out'));
      const cached = (): Promise<string[]> =>
        page.evaluate(() =>
          Object.keys((globalThis as unknown as { sessionStorage: object }).sessionStorage).filter((k) =>
            /accesstoken|refreshtoken|idtoken/i.test(k),
          ),
        );
      assert.deepEqual(await cached(), [], 'MSAL kept no token in this tab');
      await page.reload();
      // Signed out, the page reads the status without a token (401, the error shows); signed in, it names who.
      await page.waitForFunction(
        () =>
          document.querySelector('#error')?.hidden === false ||
          (document.querySelector('#who')?.textContent ?? '') !== '',
        null,
        WAIT,
      );
      assert.equal(await page.textContent('#who'), '', 'a reload does not sign in again');
      await page.close();
    },
  );

  test('a reader signs in with MSAL and gets the status report, without the redrive controls', { skip }, async () => {
    const batchId = await submitAs('carol');
    const page = await signIn('rita', ['Batches.Read']);
    assert.equal(await page.textContent('#who'), 'signed in as rita (Batches.Read)');
    await page.waitForSelector(
      `#open-batches tr[data-batch="${batchId}"], #recent-batches tr[data-batch="${batchId}"]`,
      WAIT,
    );
    assert.ok(await page.isVisible('#tiles'));
    assert.ok(await page.isHidden('#redrive-form'));
    assert.ok(await page.isHidden('#mine'));
    await page.close();
    assert.deepEqual(problems, [], 'no script error and no CSP violation');
  });
});
