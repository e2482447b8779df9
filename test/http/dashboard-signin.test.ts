/**
 * The status page with PUSHDRAIN_AUTH=entra, in headless Chromium against the local host and the
 * local issuer: signing in with a pasted dev token shows who is signed in and only what the
 * token's roles allow (a submitter finds its own batches and nothing else, a reader sees the
 * status report without the redrive controls, an operator gets them), under the page's CSP.
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
  id: string;
  getClientRects(): ArrayLike<{ top: number }>;
}
declare const document: {
  querySelector(selector: string): El | null;
  querySelectorAll(selector: string): ArrayLike<El> & Iterable<El>;
  activeElement: El | null;
};

const skip = browserSkip();
const WAIT = { timeout: 30_000, polling: 100 };

describe('status page sign-in with an Entra token (local issuer)', () => {
  let iss: TestIssuer;
  let stack: LocalStack;
  let browser: Browser;
  const problems: string[] = [];
  const statusRequests: string[] = [];

  before(async () => {
    if (skip) return;
    browser = await launchBrowser();
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

  async function signIn(name: string, roles: Role[]): Promise<Page> {
    const page = await browser.context.newPage();
    // Expected: the load before sign-in (401), and the find of another submitter's batch (404).
    page.on('console', (m) =>
      m.type() === 'error' && !/status of (401|404)/.test(m.text()) ? problems.push(m.text()) : undefined,
    );
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('request', (r) => {
      if (r.url().endsWith('/api/ops/status'))
        statusRequests.push(`${name}: ${r.headers().authorization ? 'bearer' : 'none'}`);
    });
    const res = await page.goto(`${stack.host.base}/api/dashboard#refresh=300`);
    assert.equal(res?.status(), 200);
    await page.fill('#token', await iss.token(name, roles));
    await page.click('#token-form button[type=submit]');
    await page.waitForFunction((n) => (document.querySelector('#who')?.textContent ?? '').includes(n), name, WAIT);
    return page;
  }

  const hidden = (page: Page, selector: string): Promise<boolean> =>
    page.evaluate((s) => document.querySelector(s)?.hidden ?? false, selector);

  test(
    'before sign-in the page says what the app answered and points at the token, not at a function key',
    { skip },
    async () => {
      const page = await browser.context.newPage();
      await page.goto(`${stack.host.base}/api/dashboard`);
      await page.waitForFunction(() => document.querySelector('#error')?.hidden === false, undefined, WAIT);
      const error = (await page.textContent('#error')) ?? '';
      assert.match(
        error,
        /^Refused \(401\): a bearer token is required \(app role Batches\.Read\)\. (Sign in with Microsoft, or paste|Paste) a token into "Entra token" above\.$/,
      );
      assert.doesNotMatch(error, /function key/);
      const focused = await page.evaluate(() => document.activeElement?.id ?? '');
      assert.ok(['token', 'msal-sign-in'].includes(focused), `focus on the sign-in, not the key box: ${focused}`);
      await page.close();
    },
  );

  test(
    'a submitter sees who it is, finds its own batch, not another’s, and no status report or redrive',
    { skip },
    async () => {
      const mine = await submitAs('alice');
      const theirs = await submitAs('bob');
      const page = await signIn('alice', ['Batches.Submit']);
      assert.equal(await page.textContent('#who'), 'signed in as alice (Batches.Submit)');
      for (const s of ['#tiles', '#redrive-form', '#dead-letter-form', '#queues'])
        assert.ok(await page.isHidden(s), `${s} is hidden for a submitter`);
      assert.ok(await page.isVisible('#find-form'));
      await page.fill('#find-id', mine);
      await page.click('#find-form button[type=submit]');
      await page.waitForFunction(
        (id) => (document.querySelector('#find-result')?.textContent ?? '').includes(id),
        mine,
        WAIT,
      );
      await page.fill('#find-id', theirs);
      await page.click('#find-form button[type=submit]');
      await page.waitForFunction(
        (id) => document.querySelector('#find-result')?.textContent === `no batch ${id}`,
        theirs,
        WAIT,
      );
      // Before sign-in the page tries once without a token (401); signed in, it does not ask again.
      assert.ok(!statusRequests.includes('alice: bearer'), 'the page does not ask for the status report');
      assert.equal(await hidden(page, '#error'), true);
      await page.close();
    },
  );

  test('signing out forgets the pasted token: the page asks again without one', { skip }, async () => {
    const page = await signIn('rita', ['Batches.Read']);
    await page.waitForSelector('body[data-loaded]', WAIT);
    assert.ok(await page.isVisible('#sign-out'));
    const sent: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/api/ops/status')) sent.push(r.headers().authorization ? 'bearer' : 'none');
    });
    await page.click('#sign-out');
    await page.waitForFunction(() => (document.querySelector('#who')?.textContent ?? 'x') === '', null, WAIT);
    assert.ok(await page.isHidden('#sign-out'));
    await page.waitForFunction(() => document.querySelector('#error')?.hidden === false, null, WAIT);
    // At refresh=300 a poll can leave with the token just before the click lands; once one goes
    // without it, none may carry it again.
    const first = sent.indexOf('none');
    assert.ok(first >= 0 && sent.slice(first).every((s) => s === 'none'), `after sign-out: ${sent.join(', ')}`);
    await page.close();
  });

  test(
    'a reader sees the status report (every batch) without the redrive controls; an operator gets them',
    { skip },
    async () => {
      const batchId = await submitAs('carol');
      const reader = await signIn('rita', ['Batches.Read']);
      await reader.waitForFunction(
        (id) =>
          document.querySelector(`#open-batches tr[data-batch="${id}"], #recent-batches tr[data-batch="${id}"]`) !==
          null,
        batchId,
        WAIT,
      );
      const row = `#open-batches tr[data-batch="${batchId}"], #recent-batches tr[data-batch="${batchId}"]`;
      assert.equal((await reader.textContent(`${row} >> .submitter`))?.trim(), 'carol', 'the submitter is on the page');
      assert.equal(await reader.textContent('#who'), 'signed in as rita (Batches.Read)');
      assert.ok(await reader.isVisible('#tiles'));
      assert.ok(await reader.isHidden('#redrive-form'));
      assert.ok(await reader.isHidden('#dead-letter-form'));
      assert.ok(await reader.isVisible('#deliveries'), 'a reader sees the event deliveries');
      assert.ok(await reader.isHidden('#webhook-test-form'), 'but not the test event button');
      assert.ok(statusRequests.includes('rita: bearer'));

      // The overload tile in words a newcomer knows, explained on hover.
      const overload = reader.locator('#tiles .tile', { hasText: 'chunks done twice / drains cut short here' });
      assert.match((await overload.getAttribute('title')) ?? '', /^Chunks done twice: .*another drain had taken/);
      // Idle: the count and the idle time it covers; an hourly rate only after enough idle time.
      await reader.waitForFunction(
        () =>
          /idle Storage tx in \d+ s idle \(a rate per hour after 10 min of idle\)/.test(
            document.querySelector('#cost')?.textContent ?? '',
          ),
        undefined,
        WAIT,
      );
      assert.doesNotMatch((await reader.textContent('#cost')) ?? '', /per hour \(/);
      // A narrow window: the depth legend wraps between names, never inside one ("work-" / "3").
      await reader.setViewportSize({ width: 480, height: 900 });
      const legend = await reader.evaluate(() =>
        [...document.querySelectorAll('#legend-depth span')].map((el) => {
          const rects = [...Array.from(el.getClientRects())];
          return { name: el.textContent ?? '', lines: rects.length, top: Math.round(rects[0]?.top ?? 0) };
        }),
      );
      assert.ok(
        new Set(legend.map((l) => l.top)).size > 1,
        `the legend wraps at this width: ${JSON.stringify(legend)}`,
      );
      assert.deepEqual(
        legend.filter((l) => l.lines !== 1),
        [],
        'each name on one line',
      );
      await reader.close();

      const operator = await signIn('oscar', ['Batches.Read', 'Operations.Admin']);
      await operator.waitForSelector('body[data-loaded]', WAIT);
      assert.ok(await operator.isVisible('#redrive-form'));
      assert.ok(await operator.isVisible('#dead-letter-form'));
      assert.ok(await operator.isVisible('#webhook-test-form'));
      await operator.close();
      assert.deepEqual(problems, [], 'no script error and no CSP violation');
    },
  );
});
