/**
 * The read side of a batch: its status, its timeline, and the report finalize wrote.
 */
import { maySee, type Principal } from '../auth/principal';
import type { Report } from '../billing/report';
import type { PriceSettings } from '../config/price-settings';
import { ValidationError } from '../errors';
import { isValidBatchId, layout } from '../layout';
import type { BlobStore } from '../ports';
import { type BatchStatus, batchStatus } from './batch-status';
import type { ManifestStore } from './manifest-store';
import { type BatchTimelineBody, timelineBody } from './timeline-view';

/** A ready report comes with its bytes as finalize wrote them: what `reportSha256` is the digest of. */
export type ReportLookup =
  | { kind: 'not_found' }
  | { kind: 'not_ready'; status: BatchStatus['status'] }
  | { kind: 'ready'; report: Report; bytes: Buffer };

/** Rejects anything that is not a batch id before it can become part of a blob path. */
function checkBatchId(batchId: string): void {
  if (!isValidBatchId(batchId))
    throw new ValidationError('batchId must be 1-64 characters of a-z 0-9 -', { code: 'invalid_batch_id' });
}

export class BatchReader {
  constructor(
    private readonly manifests: ManifestStore,
    private readonly blobs: BlobStore,
    /** The list prices of the status's cost estimate. */
    private readonly prices?: PriceSettings,
  ) {}

  /**
   * The `GET /api/batches/{id}` body, or undefined for a batch that was never accepted or that
   * `viewer` may not see: the manifest is read either way, so the two answers cost the same.
   */
  async status(batchId: string, viewer?: Principal): Promise<BatchStatus | undefined> {
    checkBatchId(batchId);
    const got = await this.manifests.read(batchId);
    if (!got || (viewer && !maySee(viewer, got.manifest.submitter))) return undefined;
    return batchStatus(got.manifest, this.prices);
  }

  /** The `GET /api/batches/{id}/timeline` body; undefined exactly when status() is (the same read). */
  async timeline(batchId: string, viewer?: Principal): Promise<BatchTimelineBody | undefined> {
    checkBatchId(batchId);
    const got = await this.manifests.read(batchId);
    if (!got || (viewer && !maySee(viewer, got.manifest.submitter))) return undefined;
    // The operator's webhooks and topic are the operator's business: a submitter sees its callback only.
    return timelineBody(got.manifest, !viewer || viewer.roles.has('Batches.Read'));
  }

  async report(batchId: string, viewer?: Principal): Promise<ReportLookup> {
    const status = await this.status(batchId, viewer);
    if (!status) return { kind: 'not_found' };
    if (status.status !== 'completed') return { kind: 'not_ready', status: status.status };
    const got = await this.blobs.read(layout.report(batchId));
    if (!got) return { kind: 'not_ready', status: status.status };
    return { kind: 'ready', report: JSON.parse(got.body.toString('utf8')) as Report, bytes: got.body };
  }
}
