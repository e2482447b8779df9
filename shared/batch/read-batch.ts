/** The read side of the HTTP API: status and report of one batch. */
import type { Report } from '../billing/report';
import { ValidationError } from '../errors';
import { layout } from '../layout';
import { isValidBatchId } from '../model/batch-id';
import type { BlobStore } from '../ports';
import { type BatchStatusBody, type ManifestStore, statusBody } from './manifest';

export type ReportLookup = { kind: 'not_found' } | { kind: 'not_ready'; status: BatchStatusBody['status'] } | { kind: 'ready'; report: Report };

/** Rejects anything that is not a batch id before it can become part of a blob path. */
export function checkBatchId(batchId: string): void {
  if (!isValidBatchId(batchId)) throw new ValidationError('batchId must be 1-64 characters of a-z 0-9 -', 400, 'invalid_batch_id');
}

export class BatchReader {
  constructor(
    private readonly manifests: ManifestStore,
    private readonly blobs: BlobStore,
  ) {}

  /** The `GET /api/batches/{id}` body, or undefined for a batch that was never accepted. */
  async status(batchId: string): Promise<BatchStatusBody | undefined> {
    checkBatchId(batchId);
    const got = await this.manifests.read(batchId);
    return got ? statusBody(got.manifest) : undefined;
  }

  async report(batchId: string): Promise<ReportLookup> {
    const status = await this.status(batchId);
    if (!status) return { kind: 'not_found' };
    if (status.status !== 'completed') return { kind: 'not_ready', status: status.status };
    const got = await this.blobs.read(layout.report(batchId));
    if (!got) return { kind: 'not_ready', status: status.status };
    return { kind: 'ready', report: JSON.parse(got.body.toString('utf8')) as Report };
  }
}
