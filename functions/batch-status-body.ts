/**
 * The `GET /api/batches/{batchId}` body (a fixed contract: the HTTP API in the README and
 * docs/ARCHITECTURE.md), built field by field from the core's view of the batch: a field added to
 * that view reaches no client until it is added here.
 */
import type { Submitter } from '../shared/auth/principal';
import type { BatchStatus, PublicStatus } from '../shared/batch/batch-status';
import type { ControlMismatch } from '../shared/billing/control-check';
import type { BatchCost } from '../shared/cost/batch-cost';
import type { ControlTotals } from '../shared/model/control-totals';

export interface BatchStatusBody {
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
  controlTotals?: ControlTotals;
  reportSha256?: string;
  reason?: BatchStatus['reason'];
  mismatches?: ControlMismatch[];
  cost?: BatchCost;
}

export function statusBody(s: BatchStatus): BatchStatusBody {
  return {
    batchId: s.batchId,
    status: s.status,
    transactions: s.transactions,
    chunks: s.chunks,
    chunksDone: s.chunksDone,
    chunksFailed: s.chunksFailed,
    submittedAt: s.submittedAt,
    ...(s.completedAt !== undefined ? { completedAt: s.completedAt } : {}),
    ...(s.error !== undefined ? { error: s.error } : {}),
    ...(s.submitter !== undefined ? { submitter: s.submitter } : {}),
    ...(s.controlTotals !== undefined ? { controlTotals: s.controlTotals } : {}),
    ...(s.reportSha256 !== undefined ? { reportSha256: s.reportSha256 } : {}),
    ...(s.reason !== undefined ? { reason: s.reason } : {}),
    ...(s.mismatches !== undefined ? { mismatches: s.mismatches } : {}),
    ...(s.cost !== undefined ? { cost: s.cost } : {}),
  };
}
