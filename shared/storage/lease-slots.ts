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
 * Blob leases last 15–60 s. A crashed drain blocks its slot for at most the lease; a live drain
 * renews every 5 s while it runs (none idle), so a renewal may wait 25 s behind a slow store and
 * still land in time: on a starved machine Storage requests have waited that long (docs/DESIGN.md,
 * the drain under overload), and 15 s lost slots to renewals that came too late.
 */
const LEASE_SECONDS = 30;
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
    let released = false;
    let lost = false;
    const timer = setInterval(() => {
      lease.renewLease().catch((e: unknown) => {
        if (released || lost) return;
        if (!leaseGone(e)) {
          // Throttled or unreachable: the lease has 10 s left, the next renewal tries again.
          this.log.warn(`drain slot ${name}: lease renewal failed: ${String((e as Error).message)}`);
          return;
        }
        // Another drain took the slot (our lease expired first): stop, once, and say so once.
        lost = true;
        clearInterval(timer);
        this.log.warn(`drain slot ${name}: lease lost to another drain; this drain stops taking messages`);
      });
    }, RENEW_EVERY_MS);
    timer.unref();
    return {
      id: name,
      index,
      get lost() {
        return lost;
      },
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        // Someone else's lease now: releasing it would fail, and must not succeed.
        if (lost) return;
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

/** A renewal refused because the lease is not ours any more: 409 (another lease ID, or none) or 412. */
function leaseGone(e: unknown): boolean {
  const status = statusOf(e);
  return status === 409 || status === 412;
}
