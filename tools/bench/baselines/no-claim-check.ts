/**
 * No claim check, no chunking: every transaction travels inline in its own queue message and
 * is billed on its own. It is pushdrain's data path with a chunk of one transaction carried in
 * the message instead of a blob: validation, manifest, result format, ReduceProcessor and
 * finalizer are the shared code; one result per transaction is kept (keyed by batch and
 * position), because that is what makes an at-least-once per-message worker idempotent.
 * Triggered like a plain Azure Functions queue trigger (the usual home of such a design).
 */
import { createHash } from 'node:crypto';

import { isSettled, type Manifest } from '../../../shared/batch/manifest';
import { billChunk } from '../../../shared/billing/bill';
import { encodeResult } from '../../../shared/billing/result-blob';
import type { AppParts } from '../../../shared/compose/app-parts';
import { PermanentError } from '../../../shared/errors';
import { bufferSource } from '../../../shared/ingest/body';
import { chunkBody } from '../../../shared/ingest/chunk-source';
import { validateBody } from '../../../shared/ingest/validate-body';
import { batchIdFor, layout } from '../../../shared/layout';
import { resultPointer } from '../../../shared/model/chunk-codec';
import { controlSumsOf } from '../../../shared/model/control-totals';
import type { Transaction } from '../../../shared/model/transaction';
import { validateTransaction } from '../../../shared/model/validate-transaction';
import type { Wake } from '../../../shared/notify/notifier';
import type { MessageProcessor, QueueMessage } from '../../../shared/ports';
import { Pool } from '../../../shared/util/pool';
import type { AppOptions, BenchApp } from '../app';
import { startFunctionsQueueListener } from './functions-queue-trigger';
import { startPollingApp } from './polling-app';

/** Same enqueue concurrency as pushdrain's ingest uses for its pointers. */
const ENQUEUE_CONCURRENCY = 16;

interface InlineMessage {
  v: 1;
  batchId: string;
  chunk: number;
  txn: Transaction;
}

/** Validate everything first (writes nothing on a bad batch), then one message per transaction. */
async function submitInline(ctx: AppParts, body: Buffer): Promise<string> {
  const open = bufferSource(body, false, ctx.settings.tuning.maxInflatedBytes);
  const summary = await validateBody(open, 'ndjson');
  const batchId = batchIdFor(undefined);
  const now = ctx.clock.now();
  const manifest: Manifest = {
    v: 1,
    batchId,
    state: 'ingesting',
    source: 'http',
    bodySha256: summary.sha256,
    submittedAt: new Date(now).toISOString(),
    transactions: summary.transactions,
    chunkSize: 1,
    chunks: 0,
    queues: [],
    notification: 'sent',
    done: [],
    failed: [],
  };
  const etag = await ctx.manifests.create(manifest);
  if (etag === undefined) throw new Error(`batch ${batchId} already exists`);
  const partitions = ctx.settings.tuning.partitions;
  const offset = createHash('sha256').update(batchId).digest().readUInt32BE(0) % partitions;
  const touches = new Map<string, Required<Wake>>();
  const pool = new Pool(ENQUEUE_CONCURRENCY);
  let chunk = 0;
  for await (const [line] of chunkBody({ open, format: 'ndjson', sha256: summary.sha256 }, 1)) {
    const queue = ctx.names.inputQueue((offset + chunk) % partitions);
    const message: InlineMessage = { v: 1, batchId, chunk: chunk++, txn: JSON.parse(line as string) as Transaction };
    const t = touches.get(queue) ?? { queue, chunks: 0, payloadSize: 0 };
    t.chunks++;
    touches.set(queue, t);
    await pool.run(() => ctx.queues.send(queue, message));
  }
  await pool.drain();
  const accept = (cur: Manifest): Manifest => ({
    ...cur,
    state: 'accepted',
    acceptedAt: new Date(ctx.clock.now()).toISOString(),
    chunks: chunk,
    queues: [...touches.values()],
  });
  let accepted = accept(manifest);
  if ((await ctx.manifests.replace(accepted, { manifest, etag })) === undefined) {
    // Results were recorded meanwhile: merge with them.
    const updated = await ctx.manifests.update(batchId, (cur) => (cur.state === 'ingesting' ? accept(cur) : undefined));
    if (!updated) throw new Error(`manifest of ${batchId} vanished`);
    accepted = updated.manifest;
  }
  if (isSettled(accepted)) await ctx.finalizer.ifSettled(accepted);
  return batchId;
}

/** Bills the one transaction in the message and records its result for the reduce step. */
function inlineMapProcessor(ctx: AppParts): MessageProcessor {
  return {
    process: async (m: QueueMessage) => {
      let msg: InlineMessage;
      try {
        msg = JSON.parse(m.text) as InlineMessage;
      } catch {
        throw new PermanentError('message is not JSON');
      }
      const r = validateTransaction(msg.txn, 1);
      if ('errors' in r) throw new PermanentError('message does not hold a valid transaction');
      const { body } = await encodeResult(
        msg.batchId,
        msg.chunk,
        billChunk([r.ok], ctx.settings.taxRates),
        controlSumsOf([r.ok]),
      );
      await ctx.blobs.write(layout.result(msg.batchId, msg.chunk), body, {
        contentType: 'application/x-ndjson',
        contentEncoding: 'gzip',
      });
      await ctx.queues.send(
        ctx.names.resultsQueue,
        resultPointer({ batchId: msg.batchId, chunk: msg.chunk, count: 1 }),
      );
    },
  };
}

export function startNoClaimCheck(options: AppOptions): Promise<BenchApp> {
  return startPollingApp(
    { design: 'no-claim-check', listener: startFunctionsQueueListener, map: inlineMapProcessor, submit: submitInline },
    options,
  );
}
