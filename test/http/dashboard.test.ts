/**
 * The status page in Debian's headless Chromium (playwright-core), against the local stack
 * (Azurite, the development broker, the local host as a child). Events are held back by the
 * broker (ServerBusy) at submission and delivered by the test, queue by queue, so each state
 * the page must show (queued, half done, done; poisoned, redriven, done; dead-lettered,
 * redriven, done) exists for certain.
 * Skipped, with the install command, where Chromium is missing; CI requires it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { BlobServiceClient } from '@azure/storage-blob';
import type { Page } from 'playwright-core';

import { layout } from '../../shared/layout';
import { type EntityNames, entityNames } from '../../shared/names';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { type Browser, browserSkip, launchBrowser } from '../support/browser';
import { slotContainer, wakeForSlots } from '../support/dead-letter-stack';
import { LOCAL_KEY, type LocalStack, startLocalStack, submitHeld, wake } from '../support/local-stack';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

// What the page functions (run in the browser) touch; the project compiles without the DOM lib.
interface El {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: {
  querySelector(selector: string): El | null;
  querySelectorAll(selector: string): ArrayLike<El> & Iterable<El>;
};

const KEY = 'fn-key-from-the-fragment';
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const WAIT = { timeout: 60_000, polling: 100 };

/** Each test is reported skipped (with the install command) where Chromium is missing; never passed. */
const skip = browserSkip();

describe('status page in headless Chromium', () => {
  let stack: LocalStack;
  let names: EntityNames;
  let browser: Browser;
  let page: Page;
  let hook: WebhookReceiver;
  const requests: { url: string; key: string | undefined }[] = [];
  const problems: string[] = [];

  before(async () => {
    if (skip) return;
    browser = await launchBrowser(); // first: where Chromium is required and missing, fail at once
    hook = await startWebhookReceiver(WEBHOOK_SECRET);
    stack = await startLocalStack({
      PUSHDRAIN_CHUNK_SIZE: '500',
      PUSHDRAIN_PARTITIONS: '2',
      PUSHDRAIN_MAX_IDLE_MS: '1000',
      PUSHDRAIN_WEBHOOK_URL: hook.url,
      PUSHDRAIN_WEBHOOK_SECRET: WEBHOOK_SECRET,
      PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: '1',
    });
    names = entityNames(stack.prefix, 2);
    page = await browser.context.newPage();
    page.on('request', (r) => requests.push({ url: r.url(), key: r.headers()['x-functions-key'] }));
    page.on('console', (m) => (m.type() === 'error' ? problems.push(`${m.text()} ${m.location().url}`) : undefined));
    page.on('pageerror', (e) => problems.push(e.message));
  });

  after(async () => {
    await browser?.close();
    await stack?.stop();
    await hook?.close();
  });

  const held = (count: number, seed: number): Promise<{ batchId: string; chunks: number }> =>
    submitHeld(stack, toNdjson(generate(count, seed, 20)));

  const depthOf = (queue: string): Promise<number> =>
    page.evaluate(
      (q) =>
        Number((document.querySelector(`#queues tr[data-queue="${q}"] td.depth`)?.textContent ?? '').replace(/,/g, '')),
      queue,
    );

  function bar(batchId: string): Promise<{ now: number; max: number; status: string }> {
    return page.evaluate((id) => {
      const row = `#open-batches tr[data-batch="${id}"]`;
      const b = document.querySelector(`${row} [role=progressbar]`);
      return {
        now: Number(b?.getAttribute('aria-valuenow')),
        max: Number(b?.getAttribute('aria-valuemax')),
        status: document.querySelector(`${row} td.status`)?.textContent ?? '',
      };
    }, batchId);
  }

  async function finished(batchId: string, status: string): Promise<void> {
    try {
      await page.waitForFunction(
        ([id, s]) => document.querySelector(`#recent-batches tr[data-batch="${id}"] td.status`)?.textContent === s,
        [batchId, status] as const,
        WAIT,
      );
    } catch (e) {
      const shown = await page.textContent('main').catch(() => '(no page)');
      throw new Error(
        `batch ${batchId} never showed ${status}: ${(e as Error).message}\n--- page ---\n${shown}\n--- host ---\n${stack.host.output().slice(-4000)}`,
      );
    }
  }

  test(
    'the page loads with the key from the URL fragment, sends it only as a header, and drops it from the address',
    { skip },
    async () => {
      const res = await page.goto(`${stack.host.base}/api/dashboard#key=${KEY}&refresh=400`);
      assert.equal(res?.status(), 200);
      assert.ok(!(await res.text()).includes(KEY), 'the HTML holds no key');
      await page.waitForSelector('body[data-loaded]', { timeout: 30_000 });
      assert.equal(new URL(page.url()).hash, '#refresh=400', 'the key is gone from the address bar');
      const reads = requests.filter((r) => r.url.includes('/api/ops/status'));
      assert.ok(reads.length >= 1);
      for (const r of reads) {
        assert.equal(r.key, KEY, 'sent as x-functions-key');
        assert.ok(!r.url.includes(KEY), 'never in a URL');
      }
      assert.equal(
        await page.textContent('#bus-note'),
        'Counted by peeking (Listen right only), up to 100 per entity.',
      );
      // The host has just started: too little idle time for an hourly rate, so none (the count, if any).
      const cost = (await page.textContent('#cost')) ?? '';
      assert.match(cost, /no idle period yet|idle Storage tx in \d+ s idle \(a rate per hour after 10 min of idle\)/);
      assert.doesNotMatch(cost, /per hour \(/);
    },
  );

  test(
    "a batch: in flight at 0/4 while its queues' depth rises, half done, then completed and the depth back to 0",
    { skip },
    async () => {
      const { batchId, chunks } = await held(2000, 601);
      assert.equal(chunks, 4);
      const first = names.inputQueueOf(batchId, 0);
      const second = names.inputQueueOf(batchId, 1);
      assert.notEqual(first, second, 'chunks alternate between the two partitions');
      await page.waitForSelector(`#open-batches tr[data-batch="${batchId}"]`, WAIT);
      assert.deepEqual(await bar(batchId), { now: 0, max: 4, status: 'accepted' });
      await page.waitForFunction(
        ([a, b]) =>
          [a, b].every((q) => document.querySelector(`#queues tr[data-queue="${q}"] td.depth`)?.textContent === '2'),
        [first, second] as const,
        WAIT,
      );

      await wake(stack, [first]);
      await page.waitForFunction(
        (id) =>
          document
            .querySelector(`#open-batches tr[data-batch="${id}"] [role=progressbar]`)
            ?.getAttribute('aria-valuenow') === '2',
        batchId,
        WAIT,
      );
      assert.deepEqual(
        await bar(batchId),
        { now: 2, max: 4, status: 'processing' },
        'the bar moved: the woken partition is done',
      );
      assert.equal(await depthOf(first), 0);
      assert.equal(await depthOf(second), 2, 'the other partition still waits for its event');

      await wake(stack, [second]);
      await finished(batchId, 'completed');
      assert.equal(await page.$(`#open-batches tr[data-batch="${batchId}"]`), null, 'no longer in flight');
      await page.waitForFunction(
        () => [...document.querySelectorAll('#queues td.depth')].every((td) => td.textContent === '0'),
        undefined,
        WAIT,
      );
      // The depth chart kept the backlog: its scale reaches the 2 messages per queue it saw.
      const top = Number(await page.textContent('#chart-depth text'));
      assert.ok(top >= 2, `depth chart scale ${top}`);
      assert.ok((await page.$$('#chart-depth polyline')).length >= 2);
      assert.match(
        (await page.textContent('#legend-depth')) ?? '',
        /chunks billed$/,
        'what was billed, on the scale of the depths',
      );
      assert.match(
        (await page.textContent(`#recent-batches tr[data-batch="${batchId}"]`)) ?? '',
        /completed2,000(\d[\d,]* ms|\d+\.\d s)/, // the time taken: "9,876 ms" under 10 s, "13.6 s" from there
      );
    },
  );

  test(
    'a poisoned chunk is listed with its reason; the redrive button brings it back and the batch completes',
    { skip },
    async () => {
      const { batchId, chunks } = await held(1000, 602);
      assert.equal(chunks, 2);
      const work = BlobServiceClient.fromConnectionString(stack.azurite.connectionString).getContainerClient(
        `${stack.prefix}work`,
      );
      const blob = work.getBlockBlobClient(layout.chunk(batchId, 1).name);
      const good = await blob.downloadToBuffer();
      await blob.uploadData(Buffer.from('not gzip at all'));
      await wake(stack, names.inputQueues());

      await finished(batchId, 'failed');
      const row = `#poison tr:has(code:text-is("${batchId}"))`;
      await page.waitForSelector(row, WAIT);
      assert.equal(await page.textContent(`${row} td.reason`), 'chunk blob checksum mismatch');
      assert.equal(await page.textContent(`${row} td:nth-child(3)`), '1', 'the chunk');
      assert.equal(await page.textContent(`${row} td:nth-child(1)`), names.inputQueueOf(batchId, 1));
      assert.match((await page.textContent('#tiles')) ?? '', /1poison messages/);

      // Search by id: the failed batch with its error first.
      await page.fill('#find-id', batchId);
      await page.click('#find-form button');
      await page.waitForFunction(
        () => /failed/.test(document.querySelector('#find-result')?.textContent ?? ''),
        undefined,
        WAIT,
      );
      assert.match(
        (await page.textContent('#find-result')) ?? '',
        /failed 1\/2 chunks, 1 failed, 1,000 transactions.*chunk 1: chunk blob checksum mismatch/,
      );
      // The batch view's timeline: where the failed batch's time went, step by step.
      await page.waitForSelector('#batch-timeline .tl-row[data-step="finalize"]', WAIT);
      assert.deepEqual(
        await page.evaluate(() =>
          [...document.querySelectorAll('#batch-timeline .tl-row[data-step]')].map((r) => r.getAttribute('data-step')),
        ),
        // The stack has a webhook: the failed event's delivery to it follows the finalize. (The topic's
        // copy is not a delivery: it is published once, beside the terminal write.)
        ['ingest', 'map', 'reduce', 'failed', 'finalize', 'delivery'],
      );
      assert.match(
        (await page.textContent('#batch-timeline [data-step="delivery"] .tl-label')) ?? '',
        /^webhook: (pending|delivered) \(\d attempts?\)$/,
      );
      assert.equal(await page.textContent('#batch-timeline [data-step="map"] .tl-label'), 'chunks billed: 1');
      assert.equal(await page.textContent('#batch-timeline [data-step="failed"] .tl-label'), 'chunks failed: 1');
      assert.match(
        (await page.textContent('#batch-timeline [data-step="finalize"]')) ?? '',
        /^batch failed[\d,.]+ m?s → [\d,.]+ m?s \([\d,.]+ m?s\)$/,
      );
      assert.match(
        (await page.textContent('#batch-timeline .tl-summary')) ?? '',
        /^failed 1,000 transactions in 2 chunks/,
      );
      await page.fill('#find-id', 'b-no-such-batch');
      await page.click('#find-form button');
      await page.waitForFunction(
        () => document.querySelector('#find-result')?.textContent === 'no batch b-no-such-batch',
        undefined,
        WAIT,
      );

      await blob.uploadData(good); // the fix
      await page.fill('#admin-key', 'admin-key-any-works-locally');
      await page.click(`${row} button.redrive-batch`);
      // Wait for the answer, whatever it says, so that a wrong one (or none) fails with its text.
      await page
        .waitForFunction(
          () =>
            /^(moved|redrive failed|the admin key)/.test(document.querySelector('#redrive-result')?.textContent ?? ''),
          undefined,
          WAIT,
        )
        .catch(async (e: unknown) => {
          const shown = await page.textContent('#redrive-result');
          const host = stack.host.output().slice(-3000);
          throw new Error(`no redrive answer shown (${JSON.stringify(shown)})\n--- host ---\n${host}`, { cause: e });
        });
      assert.match((await page.textContent('#redrive-result')) ?? '', /^moved 1 message\(s\) back; reopened /);
      await finished(batchId, 'completed');
      await page.waitForFunction(() => document.querySelectorAll('#poison tbody tr').length === 0, undefined, WAIT);
      const redrives = requests.filter((r) => r.url.endsWith('/api/ops/redrive'));
      assert.deepEqual(
        redrives.map((r) => r.key),
        ['admin-key-any-works-locally'],
        'redrive sends the admin key',
      );
      const expected404 = (p: string): boolean => p.includes('404') && p.endsWith('/api/batches/b-no-such-batch');
      assert.deepEqual(
        problems.filter((p) => !expected404(p)),
        [],
        'no script error and no CSP violation',
      );
    },
  );

  test(
    'WorkDetected events dead-lettered by failing drains are listed with their reason; the dead-letter redrive button resubmits them and the batch completes',
    { skip },
    async () => {
      const { batchId, chunks } = await held(1000, 603);
      const queues = [...new Set(Array.from({ length: chunks }, (_, i) => names.inputQueueOf(batchId, i)))];
      const slots = slotContainer(stack);
      await slots.delete(); // every drain of these queues now fails, until the broker dead-letters the event
      await wakeForSlots(stack, queues);
      const drain = 'work-detected/Subscriptions/drain';
      const rows = `#dead-letters tr[data-entity="${drain}"]`;
      await page.waitForFunction(
        ([sel, n]) => document.querySelectorAll(sel).length === n,
        [rows, queues.length] as const,
        WAIT,
      );
      const reasons = await page.evaluate(
        (sel) => [...document.querySelectorAll(`${sel} td.reason:nth-child(2)`)].map((td) => td.textContent),
        rows,
      );
      assert.deepEqual(
        reasons,
        queues.map(() => 'MaxDeliveryCountExceeded'),
      );
      assert.equal(await page.textContent(`#bus tr[data-entity="${drain}"] td.dead`), String(queues.length));
      assert.match((await page.textContent('#tiles')) ?? '', new RegExp(`${queues.length}dead letters`));
      assert.deepEqual(
        await bar(batchId),
        { now: 0, max: chunks, status: 'accepted' },
        'the batch waits for events that will never come',
      );

      await slots.create(); // the fix
      await page.fill('#admin-key', 'admin-key-any-works-locally');
      await page.click('#redrive-dead-letters');
      await page.waitForFunction(
        (text) => document.querySelector('#dead-letter-result')?.textContent === text,
        `resubmitted ${queues.length} dead letter(s) (${drain}: ${queues.length})`,
        WAIT,
      );
      await finished(batchId, 'completed');
      await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 0, rows, WAIT);
      assert.equal(await page.textContent(`#bus tr[data-entity="${drain}"] td.dead`), '0');
      const last = requests.filter((r) => r.url.endsWith('/api/ops/redrive')).at(-1);
      assert.equal(last?.key, 'admin-key-any-works-locally', 'the dead-letter redrive sends the admin key');
      assert.deepEqual(
        problems.filter((p) => !(p.includes('404') && p.endsWith('/api/batches/b-no-such-batch'))),
        [],
        'no script error and no CSP violation',
      );
    },
  );
  test(
    'event deliveries: a poisoned one is listed with its last answer; "Send a test event" shows what each webhook answered',
    { skip },
    async () => {
      hook.script([], 503);
      const res = await fetch(`${stack.host.base}/api/batches`, {
        method: 'POST',
        body: toNdjson(generate(5, 604, 2)),
        headers: { 'Content-Type': 'application/x-ndjson', 'x-functions-key': LOCAL_KEY },
      });
      assert.equal(res.status, 202);
      const { batchId } = (await res.json()) as { batchId: string };
      const row = `#deliveries tr[data-state="poisoned"]:has(code:text-is("${batchId}"))`;
      await page.waitForSelector(row, WAIT);
      assert.equal(await page.textContent(`${row} td.reason`), 'HTTP 503');
      assert.equal(await page.textContent(`${row} td.target`), `webhook ${new URL(hook.url).origin}`);
      assert.equal(await page.textContent(`${row} td.attempts`), '2');
      assert.match((await page.textContent('#deliveries-count')) ?? '', /1 poisoned$/);

      await page.fill('#admin-key', 'admin-key-any-works-locally');
      await page.click('#webhook-test');
      const result = `#webhook-test-result div[data-target="${hook.url}"]`;
      await page.waitForSelector(result, WAIT);
      assert.match((await page.textContent(result)) ?? '', /: failed, HTTP 503, [\d,]+ ms$/);
      hook.script([], 200);
      await page.click('#webhook-test');
      await page.waitForSelector(`${result}.test-ok`, WAIT);
      assert.match((await page.textContent(result)) ?? '', /: ok, HTTP 200, [\d,]+ ms$/);
      const tests = requests.filter((r) => r.url.endsWith('/api/ops/webhooks/test'));
      assert.deepEqual(
        tests.map((r) => r.key),
        ['admin-key-any-works-locally', 'admin-key-any-works-locally'],
        'the test event sends the admin key',
      );
      assert.equal(hook.requests.at(-1)?.event.type, 'com.pushdrain.webhook.test', 'verified by the receiver');
      assert.equal(hook.unverified, 0);
    },
  );
});
