/**
 * What a client may see of a batch: its public status (the internal states show as nothing)
 * and the fields every outward view shares (the HTTP status body, the batch event's data, the
 * listing). The HTTP body itself is the adapter's (functions/batch-status-body.ts).
 */
import type { Submitter } from '../auth/principal';
import { CONTROL_TOTALS_MISMATCH, type ControlMismatch } from '../billing/control-check';
import type { PriceSettings } from '../config/price-settings';
import { type BatchCost, batchCost } from '../cost/batch-cost';
import type { ControlTotals } from '../model/control-totals';
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
  /** What ingest counted from the accepted records; absent for a batch accepted before they were kept. */
  controlTotals?: ControlTotals;
  /** sha256 (hex) of the report's JSON bytes, as `GET …/report` serves them (completed batches). */
  reportSha256?: string;
  /** Why the batch failed, when it failed on its control totals; `mismatches` then holds the figures. */
  reason?: typeof CONTROL_TOTALS_MISMATCH;
  mismatches?: ControlMismatch[];
  /** What the batch used so far and its estimated cost (with prices; absent before usage was kept). */
  cost?: BatchCost;
}

/** A manifest's control totals as clients see them, when it has them. */
export function controlTotalsOf(m: Manifest): ControlTotals | undefined {
  return m.controls ? { transactions: m.transactions, bodySha256: m.bodySha256, sums: m.controls } : undefined;
}

/** The public view of `m`, or undefined for a batch that was never accepted; with `prices`, its cost too. */
export function batchStatus(m: Manifest, prices?: PriceSettings): BatchStatus | undefined {
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
    ...(m.controls ? { controlTotals: controlTotalsOf(m) } : {}),
    ...(m.reportSha256 ? { reportSha256: m.reportSha256 } : {}),
    ...(m.mismatches ? { reason: CONTROL_TOTALS_MISMATCH, mismatches: m.mismatches } : {}),
    ...(prices && m.usage ? { cost: batchCost(m.usage, m.transactions, prices) } : {}),
  };
}
