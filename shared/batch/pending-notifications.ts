/**
 * Batches whose WorkDetected events could not be published at ingest (Service Bus down).
 * A marker `batches/pending-notify/{batchId}` is written before the 202; the timer sweep
 * lists that prefix (one request when empty), re-publishes, and removes the marker.
 */
import { ensureError } from '../errors';
import { layout, PENDING_NOTIFY_PREFIX } from '../layout';
import type { Notifier } from '../notify/events';
import type { BlobStore } from '../ports';
import type { ManifestStore } from './manifest';

export interface Renotified {
  batchId: string;
  ok: boolean;
  error?: string;
}

export class PendingNotifications {
  constructor(
    private readonly blobs: BlobStore,
    private readonly manifests: ManifestStore,
    private readonly notifier: Notifier,
  ) {}

  async mark(batchId: string): Promise<void> {
    await this.blobs.write(layout.pendingNotify(batchId), Buffer.from(batchId), { contentType: 'text/plain' });
  }

  /** Re-publishes the events of every pending batch, at most `max` per call. */
  async renotify(max: number): Promise<Renotified[]> {
    const out: Renotified[] = [];
    for await (const item of this.blobs.list('batches', PENDING_NOTIFY_PREFIX)) {
      if (out.length >= max) break;
      const batchId = layout.pendingNotifyBatch(item.name);
      const marker = layout.pendingNotify(batchId);
      const got = await this.manifests.read(batchId);
      if (!got || got.manifest.state !== 'accepted' || got.manifest.notification === 'sent') {
        await this.blobs.remove(marker); // finished, abandoned or already notified: nothing to wake
        continue;
      }
      try {
        await this.notifier.accepted(batchId, got.manifest.queues);
      } catch (e) {
        out.push({ batchId, ok: false, error: ensureError(e).message });
        continue;
      }
      await this.manifests.update(batchId, (m) => (m.notification === 'sent' ? undefined : { ...m, notification: 'sent' }));
      await this.blobs.remove(marker);
      out.push({ batchId, ok: true });
    }
    return out;
  }
}
