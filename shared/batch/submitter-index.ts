/**
 * The owner index, `batches/owners/{objectId}/{newestFirstKey}`: one empty blob per batch a token
 * submitter sent, written beside the open marker before the batch is accepted. Its names sort
 * newest first, so one listing request under a submitter's prefix finds that submitter's latest
 * batches, however many batches everyone else has sent (GET /api/batches for a submitter). The
 * entries expire with their batch (one lifecycle rule, infra's batchRetentionDays); an entry whose
 * manifest is gone is not shown (batch-pages.ts).
 */
import type { Submitter } from '../auth/principal';
import { layout, NEWEST_FIRST_KEY, ownerPrefix } from '../layout';
import type { BlobStore } from '../ports';

export interface OwnedBatch {
  batchId: string;
  /** The entry's newestFirstKey: what a cursor continues after. */
  key: string;
}

export class SubmitterIndex {
  constructor(private readonly blobs: BlobStore) {}

  /** Before the batch is accepted, so an accepted batch is never missing from its owner's list. */
  async add(submitter: Submitter, submittedAt: string, batchId: string): Promise<void> {
    await this.blobs.write(layout.ownerEntry(submitter.objectId, submittedAt, batchId), Buffer.alloc(0), {
      contentType: 'application/octet-stream',
    });
  }

  /**
   * Up to `max` of the submitter's batches, newest first, after `cursor` (a key) when given. One
   * listing request per 5,000 entries read, and the read stops as soon as it has `max`.
   */
  async newest(objectId: string, max: number, cursor?: string): Promise<OwnedBatch[]> {
    const prefix = ownerPrefix(objectId);
    const out: OwnedBatch[] = [];
    // A claim taken over by a later request can leave a second entry for one batch: show it once.
    const seen = new Set<string>();
    for await (const item of this.blobs.list('batches', prefix)) {
      const key = item.name.slice(prefix.length);
      const m = NEWEST_FIRST_KEY.exec(key);
      if (!m?.[2] || (cursor !== undefined && key <= cursor)) continue; // not ours to trust, or already shown
      if (seen.has(m[2])) continue;
      seen.add(m[2]);
      out.push({ batchId: m[2], key });
      if (out.length >= max) break;
    }
    return out;
  }
}
