/** The read side of the HTTP API: status and report of one batch. */
import { type BatchStatusBody, statusBody } from '../batch/manifest';
import type { Report } from '../billing/report';
import { ValidationError } from '../errors';
import { isValidBatchId } from '../model/batch-id';
import type { PipelineContext } from '../pipeline/context';
import { reportBlobName } from '../pipeline/finalize';
import { readBlob } from '../storage/blob-io';

/** Rejects anything that is not a batch id before it can become part of a blob path. */
export function checkBatchId(batchId: string): void {
  if (!isValidBatchId(batchId)) throw new ValidationError('batchId must be 1-64 characters of a-z 0-9 -', 400, 'invalid_batch_id');
}

export async function batchStatus(ctx: PipelineContext, batchId: string): Promise<BatchStatusBody | undefined> {
  checkBatchId(batchId);
  const got = await ctx.manifests.read(batchId);
  return got ? statusBody(got.manifest) : undefined;
}

export type ReportLookup = { kind: 'not_found' } | { kind: 'not_ready'; status: BatchStatusBody['status'] } | { kind: 'ready'; report: Report };

export async function batchReport(ctx: PipelineContext, batchId: string): Promise<ReportLookup> {
  const status = await batchStatus(ctx, batchId);
  if (!status) return { kind: 'not_found' };
  if (status.status !== 'completed') return { kind: 'not_ready', status: status.status };
  const got = await readBlob(ctx.container('reports').getBlockBlobClient(reportBlobName(batchId)));
  if (!got) return { kind: 'not_ready', status: status.status };
  return { kind: 'ready', report: JSON.parse(got.body.toString('utf8')) as Report };
}
