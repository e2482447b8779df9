/**
 * Drain slots: at most S concurrent drains per queue, held as blob leases on
 * `leases/{queue}/slot-{k}`. A lease outlives a crashed holder by at most LEASE_SECONDS,
 * so a dead drain never blocks its queue for long.
 */
import type { ContainerClient } from '@azure/storage-blob';

import { statusOf, writeBlob } from '../storage/blob-io';
import type { DrainLogger } from './types';

export interface HeldSlot {
  readonly id: string;
  release(): Promise<void>;
}

export interface DrainSlots {
  /** A free slot for the queue, or undefined when all are held. */
  acquire(queue: string): Promise<HeldSlot | undefined>;
}

/**
 * Blob leases last 15–60 s. The shortest bounds how long a crashed drain can block its slot;
 * a live drain renews three times per lease (one request per 5 s while it runs, none idle).
 */
export const LEASE_SECONDS = 15;
const RENEW_EVERY_MS = 5_000;

export class BlobLeaseSlots implements DrainSlots {
  constructor(
    private readonly container: ContainerClient,
    private readonly slotsPerQueue: number,
    private readonly log: DrainLogger,
  ) {}

  async acquire(queue: string): Promise<HeldSlot | undefined> {
    for (let k = 0; k < this.slotsPerQueue; k++) {
      const held = await this.tryAcquire(`${queue}/slot-${k}`);
      if (held) return held;
    }
    return undefined;
  }

  private async tryAcquire(name: string): Promise<HeldSlot | undefined> {
    const blob = this.container.getBlockBlobClient(name);
    const lease = blob.getBlobLeaseClient();
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await lease.acquireLease(LEASE_SECONDS);
        return this.held(name, lease);
      } catch (e) {
        const status = statusOf(e);
        if (status === 409) return undefined; // leased by another drain
        if (status !== 404 || attempt > 0) throw e;
        // First use of this slot: create its (empty) blob, racing other creators harmlessly.
        await writeBlob(blob, Buffer.alloc(0), { contentType: 'application/octet-stream', condition: { ifNoneMatch: '*' } });
      }
    }
    return undefined;
  }

  private held(name: string, lease: ReturnType<ReturnType<ContainerClient['getBlockBlobClient']>['getBlobLeaseClient']>): HeldSlot {
    const timer = setInterval(() => {
      lease.renewLease().catch((e: unknown) => this.log.warn(`drain slot ${name}: lease renewal failed: ${String((e as Error).message)}`));
    }, RENEW_EVERY_MS);
    timer.unref();
    let released = false;
    return {
      id: name,
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
