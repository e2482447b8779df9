/**
 * `GET /api/batches/{batchId}/timeline`: where a batch's time went, from what its manifest already
 * records (submission, acceptance, the timeline the progress writes fold in, completion, the
 * outbox's deliveries), for an operator without a trace collector. Bounded like the timeline:
 * a few steps, and at most BUCKETS counts per series, whatever the batch's size.
 */
import type { ControlMismatch } from '../billing/control-check';
import type { DeliveryKind, DeliveryState } from '../events/outbox';
import { isTerminal } from './batch-state';
import { type BatchStatus, batchStatus } from './batch-status';
import type { Manifest } from './manifest';

/** Deliveries shown at most (the operator's webhooks, the topic, the batch's callback). */
const MAX_DELIVERIES = 10;

export interface TimelineStep {
  step: 'ingest' | 'map' | 'reduce' | 'failed' | 'finalize' | 'delivery';
  /** What the step's end means, in a few words. */
  label: string;
  /** ms after submission. */
  startMs: number;
  /** ms after submission; absent while the step goes on. */
  endMs?: number;
  /** Chunks the step counted (map, reduce, failed). */
  chunks?: number;
  /** A delivery's target kind, state and attempts (never its URL). */
  delivery?: { kind: DeliveryKind; state: DeliveryState; attempts: number };
}

export interface BatchTimelineBody {
  batchId: string;
  status: BatchStatus['status'];
  submittedAt: string;
  completedAt?: string;
  transactions: number;
  chunks: number;
  steps: TimelineStep[];
  /** Chunks per time bucket since submission (bucket i covers [i × bucketMs, (i + 1) × bucketMs)). */
  buckets?: { bucketMs: number; billed: number[]; reduced: number[]; failed: number[] };
  /** The map steps' own time summed (work, as against waiting in the queue), and the slowest chunk. */
  map?: { workMs: number; slowest?: { chunk: number; ms: number } };
  /** The figures that disagreed, when finalize failed the batch on its control totals. */
  mismatches?: ControlMismatch[];
}

/**
 * The body for `m`, or undefined while it is internal (never answered 202), as for its status.
 * `operator` false (a submitter, without `Batches.Read`): of the deliveries, its callback only.
 */
export function timelineBody(m: Manifest, operator = true): BatchTimelineBody | undefined {
  const status = batchStatus(m);
  if (!status) return undefined;
  const submitted = Date.parse(m.submittedAt);
  const after = (iso: string | undefined): number | undefined =>
    iso === undefined ? undefined : Math.max(0, Date.parse(iso) - submitted);
  const done = isTerminal(m);
  const t = m.timeline;
  const steps: TimelineStep[] = [{ step: 'ingest', label: 'accepted', startMs: 0, ...end(after(m.acceptedAt)) }];
  if (t?.firstBilledMs !== undefined)
    steps.push({
      step: 'map',
      label: 'chunks billed',
      startMs: t.firstBilledMs,
      ...end(done || t.billed.reduce((a, b) => a + b, 0) >= m.chunks ? t.lastBilledMs : undefined),
      chunks: t.billed.reduce((a, b) => a + b, 0),
    });
  if (t?.firstReducedMs !== undefined)
    steps.push({
      step: 'reduce',
      label: 'chunks folded',
      startMs: t.firstReducedMs,
      ...end(done ? t.lastReducedMs : undefined),
      chunks: m.done.length,
    });
  else if (!t && m.progressAt !== undefined) {
    // A batch recorded before timelines: only its last settled chunk is known.
    const at = after(m.progressAt) ?? 0;
    steps.push({ step: 'reduce', label: 'last chunk settled', startMs: at, endMs: at, chunks: m.done.length });
  }
  if (m.failed.length > 0) {
    const at = t?.lastFailedMs ?? after(m.progressAt) ?? 0;
    steps.push({ step: 'failed', label: 'chunks failed', startMs: at, endMs: at, chunks: m.failed.length });
  }
  const completed = after(m.completedAt);
  if (completed !== undefined)
    steps.push({
      step: 'finalize',
      label: m.mismatches ? 'control totals mismatch' : m.state === 'failed' ? 'batch failed' : 'report written',
      startMs: Math.max(0, completed - (t?.finalizeMs ?? 0)),
      endMs: completed,
    });
  const deliveries = (m.events ?? [])
    .flatMap((e) => e.deliveries)
    .filter((d) => operator || d.kind === 'callback')
    .slice(0, MAX_DELIVERIES);
  for (const d of deliveries)
    steps.push({
      step: 'delivery',
      label: `${d.kind} ${d.state}`,
      startMs: completed ?? 0,
      ...end(d.state === 'pending' ? undefined : after(d.dueAt)),
      delivery: { kind: d.kind, state: d.state, attempts: d.attempts },
    });
  return {
    batchId: m.batchId,
    status: status.status,
    submittedAt: m.submittedAt,
    ...(m.completedAt ? { completedAt: m.completedAt } : {}),
    transactions: m.transactions,
    chunks: m.chunks,
    steps,
    ...(t
      ? {
          buckets: { bucketMs: t.bucketMs, billed: t.billed, reduced: t.reduced, failed: t.failed },
          map: { workMs: t.mapMs, ...(t.slowest ? { slowest: t.slowest } : {}) },
        }
      : {}),
    ...(m.mismatches ? { mismatches: m.mismatches } : {}),
  };
}

function end(ms: number | undefined): { endMs?: number } {
  return ms === undefined ? {} : { endMs: ms };
}
