import { isValidBatchId, layout, OPEN_PREFIX } from '../layout';
import { type BlobStore, type Clock, systemClock } from '../ports';

/**
 * The index of open batches: `batches/open/{batchId}`, written before a batch is accepted and
 * removed once it is completed or failed. It lets recovery find unfinished work without any
 * help from Service Bus, and costs one list request to read when nothing is open.
 */
export class OpenBatches {
  constructor(
    private readonly blobs: BlobStore,
    private readonly clock: Pick<Clock, 'sleep' | 'random'> = systemClock,
  ) {}

  /** Before the batch is accepted: an accepted batch is never missing from the index. */
  async add(batchId: string): Promise<void> {
    await this.blobs.write(layout.openBatch(batchId), Buffer.alloc(0), { contentType: 'application/octet-stream' });
  }

  /** After the batch is terminal; a crash before this leaves a marker that recovery removes. */
  async remove(batchId: string): Promise<void> {
    await this.blobs.remove(layout.openBatch(batchId));
  }

  /** Open batch ids, at most `max`; names that are not batch ids are skipped, never trusted. */
  async list(max: number): Promise<string[]> {
    const out: string[] = [];
    for await (const item of this.blobs.list('batches', OPEN_PREFIX)) {
      const id = item.name.slice(OPEN_PREFIX.length);
      if (isValidBatchId(id)) out.push(id);
      if (out.length >= max) break;
    }
    return out;
  }
}
