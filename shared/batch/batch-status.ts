/**
 * What a client may see of a batch: its public status (the internal states show as nothing)
 * and the fields every outward view shares (the HTTP status body, the batch event's data, the
 * listing). The HTTP body itself is the adapter's (functions/batch-status-body.ts).
 */
import type { Submitter } from '../auth/principal';
import type { BatchState } from './batch-state';
import type { Manifest } from './manifest';

export type PublicStatus = 'accepted' | 'processing' | 'completed' | 'failed';

export function publicStatus(m: Manifest): PublicStatus | undefined {
  return statusOf(m.state, m.done.length + m.failed.length);
}

/**
 * What a client sees of a batch in `state` with `settled` chunks done or failed: undefined while
 * it is internal. The status listing applies it to a manifest's metadata, without the manifest.
 */
export function statusOf(state: BatchState, settled: number): PublicStatus | undefined {
  switch (state) {
    case 'completed':
    case 'failed':
      return state;
    case 'accepted':
      return settled > 0 ? 'processing' : 'accepted';
    default:
      return undefined;
  }
}

export interface BatchStatus {
  batchId: string;
  status: PublicStatus;
  transactions: number;
  chunks: number;
  chunksDone: number;
  chunksFailed: number;
  submittedAt: string;
  completedAt?: string;
  error?: string;
  submitter?: Submitter;
}

/** The public view of `m`, or undefined for a batch that was never accepted. */
export function batchStatus(m: Manifest): BatchStatus | undefined {
  const status = publicStatus(m);
  if (!status) return undefined;
  return {
    batchId: m.batchId,
    status,
    transactions: m.transactions,
    chunks: m.chunks,
    chunksDone: m.done.length,
    chunksFailed: m.failed.length,
    submittedAt: m.submittedAt,
    ...(m.completedAt ? { completedAt: m.completedAt } : {}),
    ...(m.error ? { error: m.error } : {}),
    ...(m.submitter ? { submitter: m.submitter } : {}),
  };
}
