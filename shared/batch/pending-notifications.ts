/**
 * Batches whose WorkDetected events could not be published at ingest (Service Bus down).
 * A marker `batches/pending-notify/{batchId}` is written before the 202; the incoming/
 * sweep lists that prefix (one request when empty), re-publishes, and removes the marker.
 */
import type { PipelineContext } from '../pipeline/context';
import { writeBlob } from '../storage/blob-io';
import { firstCheck, watchdogDelayMs } from '../watchdog/check-batch';
import type { QueueTouch } from './manifest';

const PREFIX = 'pending-notify/';

/**
 * Wakes the drainers of a newly accepted batch (one event per queue touched) and schedules its
 * first watchdog check. Both go to Service Bus; if either fails the batch is marked pending.
 */
export async function notifyAccepted(ctx: PipelineContext, batchId: string, queues: readonly QueueTouch[]): Promise<void> {
  await ctx.publisher.publish(queues.map((q) => ({ storageAccount: ctx.storageAccount, queueName: q.queue, payloadSize: q.payloadSize, role: 'input' as const, batchId })));
  await ctx.publisher.scheduleWatchdog(firstCheck(batchId), watchdogDelayMs(ctx.tuning.watchdogSlaSeconds, 1));
}

export async function markNotificationPending(ctx: PipelineContext, batchId: string): Promise<void> {
  await writeBlob(ctx.container('batches').getBlockBlobClient(`${PREFIX}${batchId}`), Buffer.from(batchId), { contentType: 'text/plain' });
}

export interface Renotified {
  batchId: string;
  ok: boolean;
  error?: string;
}

/** Re-publishes the events of every pending batch, at most `max` per call. */
export async function renotifyPending(ctx: PipelineContext, max: number): Promise<Renotified[]> {
  const batches = ctx.container('batches');
  const out: Renotified[] = [];
  for await (const item of batches.listBlobsFlat({ prefix: PREFIX })) {
    if (out.length >= max) break;
    const batchId = item.name.slice(PREFIX.length);
    const got = await ctx.manifests.read(batchId);
    const marker = batches.getBlockBlobClient(item.name);
    if (!got || got.manifest.state !== 'accepted' || got.manifest.notification === 'sent') {
      await marker.deleteIfExists(); // finished, abandoned or already notified: nothing to wake
      continue;
    }
    try {
      await notifyAccepted(ctx, batchId, got.manifest.queues);
    } catch (e) {
      out.push({ batchId, ok: false, error: (e as Error).message });
      continue;
    }
    await ctx.manifests.update(batchId, (m) => (m.notification === 'sent' ? undefined : { ...m, notification: 'sent' }));
    await marker.deleteIfExists();
    out.push({ batchId, ok: true });
  }
  return out;
}
