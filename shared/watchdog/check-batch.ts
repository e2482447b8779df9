/**
 * The per-batch watchdog, at zero idle cost: a Service Bus message scheduled for
 * acceptance + SLA. When it fires on an unfinished batch it re-wakes the queues that still
 * hold its chunks, re-enqueues the pointers of chunks that have neither a result nor a
 * pointer in flight (blob + idempotent processing make a duplicate harmless), and schedules
 * the next check with a doubled delay. The last check fails the batch with a clear reason.
 */
import type { Manifest } from '../batch/manifest';
import { isSettled, isTerminal } from '../batch/manifest';
import { partitionOf } from '../model/partition';
import { resultBlobName, type ResultPointer, workBlobName, type WorkPointer } from '../model/pointers';
import type { WatchdogCheck, WorkDetected } from '../notify/events';
import type { PipelineContext } from '../pipeline/context';
import { sendPointer } from '../queue/storage-queue';
import { statusOf } from '../storage/blob-io';
import { mapLimit } from '../util/pool';

export type WatchdogOutcome =
  | { kind: 'gone' | 'finished' | 'not-accepted' }
  | { kind: 'nudged'; missing: number; reenqueued: number; nextInMs: number }
  | { kind: 'failed'; missing: number };

/** Delay before check `attempt` (1-based): SLA, 2×SLA, 4×SLA… capped at a day. */
export function watchdogDelayMs(slaSeconds: number, attempt: number): number {
  return Math.min(slaSeconds * 1000 * 2 ** (attempt - 1), 24 * 3600 * 1000);
}

export function firstCheck(batchId: string): WatchdogCheck {
  return { v: 1, batchId, attempt: 1, settledBefore: 0 };
}

function missingChunks(m: Manifest): number[] {
  const settled = new Set([...m.done, ...m.failed.map((f) => f.chunk)]);
  return Array.from({ length: m.chunks }, (_, i) => i).filter((c) => !settled.has(c));
}

export async function runWatchdogCheck(ctx: PipelineContext, check: WatchdogCheck): Promise<WatchdogOutcome> {
  const got = await ctx.manifests.read(check.batchId);
  if (!got) return { kind: 'gone' };
  const m = got.manifest;
  if (isTerminal(m)) return { kind: 'finished' };
  if (m.state !== 'accepted') return { kind: 'not-accepted' };
  if (isSettled(m)) {
    await ctx.finalizeIfSettled(m); // the finalize itself was lost (crash after the last fold)
    return { kind: 'finished' };
  }
  const missing = missingChunks(m);
  const { tuning } = ctx;
  if (check.attempt >= tuning.watchdogMaxChecks) {
    const reason = `watchdog: unfinished after ${check.attempt} checks`;
    let last: Manifest | undefined;
    for (const chunk of missing) last = await ctx.progress.record(m.batchId, { chunk, done: false, reason });
    await ctx.finalizeIfSettled(last);
    ctx.log.error(`batch ${m.batchId} failed: ${missing.length} of ${m.chunks} chunks ${reason}`);
    return { kind: 'failed', missing: missing.length };
  }

  const settled = m.chunks - missing.length;
  // With no progress since the last check, pointers may be lost: re-enqueue even when a queue
  // looks busy. With progress, only where the queue holds nothing that could be ours.
  const stalled = settled <= check.settledBefore;
  const depthOf = new Map<string, number>();
  const depth = async (queue: string): Promise<number> => {
    if (!depthOf.has(queue)) depthOf.set(queue, (await ctx.queues.getQueueClient(queue).getProperties()).approximateMessagesCount ?? 0);
    return depthOf.get(queue) ?? 0;
  };
  const wake = new Map<string, WorkDetected>();
  let reenqueued = 0;
  await mapLimit(missing, 8, async (chunk) => {
    const hasResult = await ctx.container('results').getBlockBlobClient(resultBlobName(m.batchId, chunk)).exists();
    const queue = hasResult ? ctx.names.resultsQueue : ctx.names.inputQueue(partitionOf(m.batchId, chunk, tuning.partitions));
    wake.set(queue, { storageAccount: ctx.storageAccount, queueName: queue, payloadSize: 0, role: hasResult ? 'output' : 'input', batchId: m.batchId });
    if (!stalled && (await depth(queue)) > 0) return;
    const pointer = hasResult ? resultPointer(m.batchId, chunk) : await workPointer(ctx, m.batchId, chunk);
    if (!pointer) return;
    await sendPointer(ctx.queues.getQueueClient(queue), pointer);
    reenqueued++;
  });
  await ctx.publisher.publish([...wake.values()]);
  const next: WatchdogCheck = { v: 1, batchId: m.batchId, attempt: check.attempt + 1, settledBefore: settled };
  const nextInMs = watchdogDelayMs(tuning.watchdogSlaSeconds, next.attempt);
  await ctx.publisher.scheduleWatchdog(next, nextInMs);
  ctx.log.warn(`batch ${m.batchId}: watchdog check ${check.attempt}: ${missing.length} chunks unfinished, ${reenqueued} pointers re-enqueued, next check in ${Math.round(nextInMs / 1000)} s`);
  return { kind: 'nudged', missing: missing.length, reenqueued, nextInMs };
}

function resultPointer(batchId: string, chunk: number): ResultPointer {
  // count is informational on result pointers; the fold reads the result blob's own header.
  return { v: 1, batchId, chunk, blob: resultBlobName(batchId, chunk), count: 1 };
}

/** Rebuilds a work pointer from the chunk blob's metadata (sha256, count) written at ingest. */
async function workPointer(ctx: PipelineContext, batchId: string, chunk: number): Promise<WorkPointer | undefined> {
  const blob = workBlobName(batchId, chunk);
  try {
    const props = await ctx.container('work').getBlockBlobClient(blob).getProperties();
    const sha256 = props.metadata?.sha256;
    const count = Number(props.metadata?.count);
    if (!sha256 || !Number.isInteger(count) || count < 1) {
      ctx.log.error(`batch ${batchId}: chunk blob ${blob} lacks its sha256/count metadata; cannot re-enqueue it`);
      return undefined;
    }
    return { v: 1, batchId, chunk, blob, count, sha256, bytes: props.contentLength ?? 0 };
  } catch (e) {
    if (statusOf(e) === 404) {
      ctx.log.error(`batch ${batchId}: chunk blob ${blob} is gone; the chunk cannot be redone`);
      return undefined;
    }
    throw e;
  }
}
