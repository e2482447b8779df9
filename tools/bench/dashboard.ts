/**
 * `npm run dashboard:measure`: the status page with a long history. Runs the local stack,
 * submits 1,000 small batches and waits for them, then loads the page in headless Chromium a
 * few times and reports how long it takes until the first render with data (and what the
 * status call costs). With `--screenshot FILE` it then stages a poisoned batch and a batch in
 * flight and saves a full-page screenshot (docs/dashboard.png in the README).
 * Timings are reported, never asserted.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';

import { BlobServiceClient } from '@azure/storage-blob';

import { layout } from '../../shared/layout';
import { entityNames } from '../../shared/names';
import { mapLimit } from '../../shared/util/pool';
import { launchBrowser } from '../../test/support/browser';
import {
  LOCAL_KEY,
  type LocalStack,
  startLocalStack,
  statusOf,
  submitHeld,
  wake,
} from '../../test/support/local-stack';
import { generate, toNdjson } from '../testkit/generate';

const PARTITIONS = 4;

async function fill(stack: LocalStack, batches: number): Promise<number> {
  const t0 = Date.now();
  await mapLimit(
    Array.from({ length: batches }, (_, i) => i),
    8,
    async (i) => {
      const res = await fetch(`${stack.host.base}/api/batches`, {
        method: 'POST',
        body: toNdjson(generate(20, 10_000 + i, 5)),
        headers: { 'Content-Type': 'application/x-ndjson', 'x-functions-key': LOCAL_KEY },
      });
      if (res.status !== 202) throw new Error(`batch ${i}: HTTP ${res.status} ${await res.text()}`);
    },
  );
  const deadline = Date.now() + 10 * 60_000;
  for (let i = 0; Date.now() < deadline && i < 10_000; i++) {
    const s = await statusOf(stack);
    if (s.batches.counts.completed >= batches) return Date.now() - t0;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`${batches} batches did not complete in 10 minutes`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      batches: { type: 'string', default: '1000' },
      runs: { type: 'string', default: '5' },
      screenshot: { type: 'string' },
    },
  });
  const batches = Number(values.batches);
  const runs = Number(values.runs);
  const stack = await startLocalStack({
    PUSHDRAIN_CHUNK_SIZE: '500',
    PUSHDRAIN_PARTITIONS: String(PARTITIONS),
    PUSHDRAIN_MAX_IDLE_MS: '1000',
  });
  const browser = await launchBrowser({ width: 1280, height: 900 });
  try {
    const fillMs = await fill(stack, batches);
    console.log(`${batches} batches submitted and completed in ${(fillMs / 1000).toFixed(1)} s`);

    const apiMs: number[] = [];
    let bytes = 0;
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      const res = await fetch(`${stack.host.base}/api/ops/status`, { headers: { 'x-functions-key': LOCAL_KEY } });
      bytes = (await res.arrayBuffer()).byteLength;
      apiMs.push(performance.now() - t0);
    }
    const loadMs: number[] = [];
    const domMs: number[] = [];
    for (let i = 0; i < runs; i++) {
      const page = await browser.context.newPage();
      const t0 = performance.now();
      await page.goto(`${stack.host.base}/api/dashboard#key=${LOCAL_KEY}&refresh=5000`);
      await page.waitForSelector('body[data-loaded]', { timeout: 60_000 });
      loadMs.push(performance.now() - t0);
      domMs.push(await page.evaluate('performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd'));
      await page.close();
    }
    const s = await statusOf(stack);
    const result = {
      batchesInHistory: s.batches.scanned,
      statusApi: {
        medianMs: Math.round(median(apiMs)),
        responseBytes: bytes,
        storageRequestsPerCall: undefined as number | undefined,
      },
      page: {
        medianMsToDataRendered: Math.round(median(loadMs)),
        medianMsToDomContentLoaded: Math.round(median(domMs)),
        runs: loadMs.map(Math.round),
      },
    };
    const before = (await statusOf(stack)).storage.statusRequests.total ?? 0;
    const after = (await statusOf(stack)).storage.statusRequests.total ?? 0;
    result.statusApi.storageRequestsPerCall = after - before;
    console.log(JSON.stringify(result, null, 2));

    if (values.screenshot) {
      const names = entityNames(stack.prefix, PARTITIONS);
      // A batch with a corrupt chunk: it fails, and its chunk sits in poison with the reason.
      const poisoned = await submitHeld(stack, toNdjson(generate(1000, 77, 20)));
      const work = BlobServiceClient.fromConnectionString(stack.azurite.connectionString).getContainerClient(
        `${stack.prefix}work`,
      );
      await work.getBlockBlobClient(layout.chunk(poisoned.batchId, 1).name).uploadData(Buffer.from('not gzip at all'));
      await wake(stack, names.inputQueues());
      // A larger batch, half its partitions woken: in flight, with a backlog on the others.
      const big = await submitHeld(stack, toNdjson(generate(40_000, 78, 500)));
      await wake(stack, names.inputQueues().slice(0, 2));
      const page = await browser.context.newPage();
      await page.goto(`${stack.host.base}/api/dashboard#key=${LOCAL_KEY}&refresh=1000`);
      await page.waitForSelector(`#open-batches tr[data-batch="${big.batchId}"]`, { timeout: 60_000 });
      await page.waitForSelector(`#poison tbody tr`, { timeout: 60_000 });
      await page.waitForTimeout(3000);
      mkdirSync(dirname(values.screenshot), { recursive: true });
      await page.screenshot({ path: values.screenshot, fullPage: true });
      console.log(`screenshot: ${values.screenshot}`);
    }
  } finally {
    await browser.close();
    await stack.stop();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
