/**
 * Drain slots: at most S concurrent drains per queue, held as blob leases on
 * `leases/{queue}/slot-{k}` (the "processing already running" record of the design). A lease
 * outlives a crashed holder by at most LEASE_SECONDS, so a dead drain never blocks its queue
 * for long.
 */
import type { BlobLeaseClient } from '@azure/storage-blob';

import { layout } from '../layout';
import type { DrainSlots, HeldSlot, Logger } from '../ports';
import { type AzureBlobStore, statusOf } from './azure-blob-store';

/**
 * Blob leases last 15–60 s. The shortest bounds how long a crashed drain can block its slot;
 * a live drain renews three times per lease (one request per 5 s while it runs, none idle).
 */
export const LEASE_SECONDS = 15;
const RENEW_EVERY_MS = 5_000;

export class BlobLeaseSlots implements DrainSlots {
  readonly holdLimitMs = LEASE_SECONDS * 1000;

  constructor(
    private readonly blobs: AzureBlobStore,
    /** Slots per queue: one number for every queue, or per queue (the results queue has fewer). */
    private readonly slotsPerQueue: number | ((queue: string) => number),
    private readonly log: Logger,
  ) {}

  async acquire(queue: string): Promise<HeldSlot | undefined> {
    const slots = typeof this.slotsPerQueue === 'number' ? this.slotsPerQueue : this.slotsPerQueue(queue);
    for (let k = 0; k < slots; k++) {
      const held = await this.tryAcquire(queue, k);
      if (held) return held;
    }
    return undefined;
  }

  private async tryAcquire(queue: string, k: number): Promise<HeldSlot | undefined> {
    const ref = layout.slot(queue, k);
    const name = ref.name;
    const lease = this.blobs.container(ref.container).getBlockBlobClient(name).getBlobLeaseClient();
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await lease.acquireLease(LEASE_SECONDS);
        return this.held(name, k, lease);
      } catch (e) {
        const status = statusOf(e);
        if (status === 409) return undefined; // leased by another drain
        if (status !== 404 || attempt > 0) throw e;
        // First use of this slot: create its (empty) blob, racing other creators harmlessly.
        await this.blobs.write(ref, Buffer.alloc(0), {
          contentType: 'application/octet-stream',
          condition: { ifNoneMatch: '*' },
        });
      }
    }
    return undefined;
  }

  private held(name: string, index: number, lease: BlobLeaseClient): HeldSlot {
    const timer = setInterval(() => {
      lease
        .renewLease()
        .catch((e: unknown) =>
          this.log.warn(`drain slot ${name}: lease renewal failed: ${String((e as Error).message)}`),
        );
    }, RENEW_EVERY_MS);
    timer.unref();
    let released = false;
    return {
      id: name,
      index,
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        try {
          await lease.releaseLease();
        } catch (e) {
          // An expired or stolen lease frees itself; nothing to undo.
          this.log.warn(`drain slot ${name}: release failed: ${String((e as Error).message)}`);
        }
      },
    };
  }
}
