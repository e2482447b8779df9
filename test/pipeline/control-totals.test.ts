/**
 * Control totals on real Azurite through the real handlers: the 202 and the status carry the
 * totals an independent computation gets from the submitted file, the report's digest is the
 * same in the status, the `Repr-Digest` of `GET …/report` and the signed `batch.completed` event;
 * and a chunk result broken on purpose (a chunk counted twice, a chunk missing, a sum altered)
 * fails the batch closed with the figures that differ, with no report and nothing completed.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';

import { HttpRequest } from '@azure/functions';

import { getBatchTimeline } from '../../functions/batches-http';
import { onWorkDetected } from '../../functions/drain';
import type { BatchTimelineBody } from '../../shared/batch/timeline-view';
import type { ControlMismatch } from '../../shared/billing/control-check';
import type { Report } from '../../shared/billing/report';
import type { ControlTotals } from '../../shared/model/control-totals';
import type { Transaction } from '../../shared/model/transaction';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { completed, context, post, pump, report, status } from '../support/invoke';
import { until } from '../support/poll';
import { testRuntime, useStorage } from '../support/storage';
import { startWebhookReceiver } from '../support/webhook-receiver';

useStorage();

/** The control totals of `txns`, computed apart from the app: BigInt sums, a sorted key list. */
function independentTotals(
  txns: readonly Transaction[],
): { currency: string; type: string; count: number; amount: number }[] {
  const by = new Map<string, { count: number; amount: bigint }>();
  for (const t of txns) {
    const key = `${t.currency}|${t.type}`;
    const s = by.get(key) ?? { count: 0, amount: 0n };
    s.count++;
    s.amount += BigInt(t.amount);
    by.set(key, s);
  }
  return [...by.keys()].sort().map((key) => {
    const [currency = '', type = ''] = key.split('|');
    const s = by.get(key)!;
    return { currency, type, count: s.count, amount: Number(s.amount) };
  });
}

const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

describe('control totals', () => {
  test("the 202 and the status carry the file's control totals; the report's digest agrees everywhere", async () => {
    const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
    const hook = await startWebhookReceiver(SECRET);
    try {
      const { app, parts, events, observer } = await testRuntime({
        PUSHDRAIN_CHUNK_SIZE: '100',
        PUSHDRAIN_WEBHOOK_URL: hook.url,
        PUSHDRAIN_WEBHOOK_SECRET: SECRET,
      });
      const txns = generate(450, 51, 9);
      const text = toNdjson(txns);
      // Gzipped: the body's sha256 is of the bytes as inflated.
      const res = await post(app, gzipSync(text), { 'content-encoding': 'gzip' });
      assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
      const accepted = res.jsonBody as { batchId: string; chunks: number; controlTotals: ControlTotals };
      const expected = { transactions: 450, bodySha256: sha256(text), sums: independentTotals(txns) };
      assert.deepEqual(accepted.controlTotals, expected);
      assert.ok(accepted.chunks > 1, 'several chunks, each checked');

      const { batchId } = accepted;
      await pump(app, events, () => completed(observer, batchId));
      await parts.events.idle();
      const st = (await status(observer, batchId)).jsonBody as {
        status: string;
        controlTotals: ControlTotals;
        reportSha256: string;
      };
      assert.equal(st.status, 'completed');
      assert.deepEqual(st.controlTotals, expected);

      const rep = await report(observer, batchId);
      assert.equal(rep.status, 200);
      const bytes = rep.body as Buffer;
      assert.equal(st.reportSha256, sha256(bytes), 'the status has the digest of the bytes served');
      const headers = rep.headers as Record<string, string>;
      assert.equal(
        headers['Repr-Digest'],
        `sha-256=:${Buffer.from(st.reportSha256, 'hex').toString('base64')}:`,
        'RFC 9530 Repr-Digest',
      );
      assert.equal((rep.jsonBody as Report).transactions, 450);

      const [event] = [...hook.distinct().values()];
      assert.ok(event, 'the signed event arrived and verified');
      assert.equal(hook.unverified, 0);
      assert.equal(event.event.type, 'com.pushdrain.batch.completed');
      assert.equal(event.event.data.reportSha256, st.reportSha256, "the signed event carries the report's digest");
      assert.deepEqual(event.event.data.controlTotals, expected);
    } finally {
      await hook.close();
    }
  });

  test('an Idempotency-Key replay answers with the same control totals', async () => {
    const { app } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '100' });
    const txns = generate(120, 52, 4);
    // A JSON array body: the digest is of the body as sent (no canonical form).
    const body = JSON.stringify(txns, null, 1);
    const first = await post(app, body, { 'content-type': 'application/json', 'idempotency-key': 'ct-replay-1' });
    const again = await post(app, body, { 'content-type': 'application/json', 'idempotency-key': 'ct-replay-1' });
    assert.equal(first.status, 202);
    assert.equal(again.status, 202);
    const want = { transactions: 120, bodySha256: sha256(body), sums: independentTotals(txns) };
    assert.deepEqual((first.jsonBody as { controlTotals: unknown }).controlTotals, want);
    assert.deepEqual((again.jsonBody as { controlTotals: unknown }).controlTotals, want);
  });
});

interface StoredHeader {
  v: number;
  batchId: string;
  chunk: number;
  count: number;
  rows: [string, string, number, number, number, number][];
  inputs: [string, string, number, number][];
}

interface BrokenBatch {
  batchId: string;
  status: Record<string, unknown>;
  reportStatus: number;
  reportBlob: boolean;
  event: Record<string, unknown>;
  timeline: BatchTimelineBody;
}

/**
 * A batch whose map step has run and whose results wait on `results`: `breakResults` edits their
 * blobs, then a second app (nothing held in memory: it reads the blobs) reduces and finalizes.
 */
async function brokenBatch(
  txns: Transaction[],
  breakResults: (
    read: (chunk: number) => Promise<StoredHeader>,
    write: (h: StoredHeader) => Promise<void>,
  ) => Promise<void>,
): Promise<BrokenBatch> {
  const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
  const hook = await startWebhookReceiver(SECRET);
  try {
    const env = {
      PUSHDRAIN_CHUNK_SIZE: '100',
      PUSHDRAIN_MAX_IDLE_MS: '500',
      PUSHDRAIN_WEBHOOK_URL: hook.url,
      PUSHDRAIN_WEBHOOK_SECRET: SECRET,
    };
    const { app, events, observer, observerParts, raw } = await testRuntime(env);
    const res = await post(app, toNdjson(txns));
    assert.equal(res.status, 202);
    const { batchId, chunks } = res.jsonBody as { batchId: string; chunks: number };
    assert.equal(chunks, 3);
    // The map step only: the results' wake-up is kept for the second app.
    const output: unknown[] = [];
    for (let round = 0; round < 20; round++) {
      const taken = events.take();
      if (taken.length === 0) break;
      for (const c of taken) {
        const body: unknown = JSON.parse(JSON.stringify(c.event));
        if (c.event.role === 'input') await onWorkDetected(app, body, context('drain'));
        else output.push(body);
      }
    }
    assert.ok(output.length > 0, 'the map step woke the reduce side');
    const results = raw.container('results');
    const name = (chunk: number): string => `${batchId}/${chunk}`;
    const read = async (chunk: number): Promise<StoredHeader> => {
      const body = await results.getBlobClient(name(chunk)).downloadToBuffer();
      return JSON.parse(gunzipSync(body).toString('utf8').split('\n')[0] ?? '') as StoredHeader;
    };
    const write = async (h: StoredHeader): Promise<void> => {
      const body = gzipSync(`${JSON.stringify(h)}\n`);
      await results.getBlockBlobClient(name(h.chunk)).upload(body, body.length);
    };
    await breakResults(read, write);

    for (const body of output) await onWorkDetected(observer, body, context('aggregate'));
    const got = await until('the batch to settle', 10_000, async () => {
      const s = (await status(observer, batchId)).jsonBody as Record<string, unknown>;
      return s.status === 'failed' || s.status === 'completed' ? s : undefined;
    });
    const rep = await report(observer, batchId);
    const timeline = await getBatchTimeline(
      observer,
      new HttpRequest({ method: 'GET', url: `http://localhost/api/batches/${batchId}/timeline`, params: { batchId } }),
      context('getBatchTimeline'),
    );
    const reportBlob = await raw.container('reports').getBlobClient(`${batchId}.json`).exists();
    await observerParts.events.idle();
    const [event] = [...hook.distinct().values()];
    assert.ok(event, 'the signed event arrived');
    assert.equal(event.event.type, 'com.pushdrain.batch.failed');
    return {
      batchId,
      status: got,
      reportStatus: rep.status ?? 0,
      reportBlob,
      event: event.event.data,
      timeline: timeline.jsonBody as BatchTimelineBody,
    };
  } finally {
    await hook.close();
  }
}

/** The figures an independent computation says differ between what was sent and what the chunks hold. */
function inputMismatches(sent: Transaction[], held: Transaction[]): ControlMismatch[] {
  const want = new Map<string, number>();
  const got = new Map<string, number>();
  for (const [m, txns] of [
    [want, sent],
    [got, held],
  ] as const) {
    m.set('transactions', txns.length);
    for (const s of independentTotals(txns)) {
      m.set(`${s.currency} ${s.type} count`, s.count);
      m.set(`${s.currency} ${s.type} amount`, s.amount);
    }
  }
  const out: ControlMismatch[] = [];
  for (const figure of new Set([...want.keys(), ...got.keys()])) {
    const expected = want.get(figure) ?? 0;
    const actual = got.get(figure) ?? 0;
    if (expected !== actual) out.push({ check: 'inputs', figure, expected, actual });
  }
  return out;
}

function assertFailedClosed(r: BrokenBatch): ControlMismatch[] {
  assert.equal(r.status.status, 'failed');
  assert.equal(r.status.reason, 'control_totals_mismatch');
  assert.match(String(r.status.error), /^control_totals_mismatch: /);
  assert.equal(r.status.reportSha256, undefined, 'no report digest');
  assert.equal(r.reportStatus, 409, 'no report is served');
  assert.equal(r.reportBlob, false, 'no report was written');
  assert.equal(r.event.reason, 'control_totals_mismatch');
  assert.deepEqual(r.event.mismatches, r.status.mismatches, 'the event has the figures the status has');
  assert.deepEqual(r.timeline.mismatches, r.status.mismatches, 'so has the timeline');
  assert.equal(r.timeline.steps.find((s) => s.step === 'finalize')?.label, 'control totals mismatch');
  return r.status.mismatches as ControlMismatch[];
}

describe('a result broken on purpose fails the batch closed', () => {
  const txns = generate(300, 53, 6);
  const chunk = (i: number): Transaction[] => txns.slice(i * 100, i * 100 + 100);

  test('a chunk counted twice: chunk 0 also stands in for chunk 1', async () => {
    const r = await brokenBatch(txns, async (read, write) => {
      await write({ ...(await read(0)), chunk: 1 });
    });
    const mismatches = assertFailedClosed(r);
    const held = [...chunk(0), ...chunk(0), ...chunk(2)];
    const inputs = mismatches.filter((m) => m.check === 'inputs');
    assert.deepEqual(inputs, inputMismatches(txns, held).slice(0, inputs.length));
    assert.ok(
      inputs.some((m) => m.figure.endsWith(' amount')),
      JSON.stringify(inputs),
    );
  });

  test('a chunk missing: chunk 2 comes back empty', async () => {
    const r = await brokenBatch(txns, async (read, write) => {
      const h = await read(2);
      await write({ ...h, count: 0, rows: [], inputs: [] });
    });
    const mismatches = assertFailedClosed(r);
    const inputs = mismatches.filter((m) => m.check === 'inputs');
    assert.deepEqual(inputs[0], { check: 'inputs', figure: 'transactions', expected: 300, actual: 200 });
    assert.deepEqual(inputs, inputMismatches(txns, [...chunk(0), ...chunk(1)]).slice(0, inputs.length));
    assert.ok(
      mismatches.some((m) => m.check === 'report' && m.figure === 'transactions' && m.actual === 200),
      'the report would have counted 200',
    );
  });

  test("a sum altered: one row's charges of chunk 1 are a cent more", async () => {
    let currency = '';
    let before = 0;
    const r = await brokenBatch(txns, async (read, write) => {
      const h = await read(1);
      const row = h.rows[0]!;
      currency = row[1];
      before = row[3];
      row[3] += 1;
      await write(h);
    });
    const mismatches = assertFailedClosed(r);
    const charges = independentTotals(txns).find((s) => s.currency === currency && s.type === 'charge')?.amount ?? 0;
    assert.ok(before >= 0);
    assert.deepEqual(mismatches, [
      { check: 'report', figure: `${currency} charges`, expected: charges, actual: charges + 1 },
    ]);
  });
});
