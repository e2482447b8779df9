/**
 * The batch's timeline as the manifest keeps it: when its chunks were billed (the map step's end,
 * carried by each result pointer) and folded (the reduce's manifest write), and how long the map
 * steps took. The progress write that records a chunk folds its times in, so the timeline costs
 * no storage request of its own; and it stays small whatever the batch's size: chunks are counted
 * in at most BUCKETS time buckets, whose width doubles as the batch runs longer.
 */

/** Buckets per series: a 500-chunk batch and a 5-chunk one keep the same few hundred bytes. */
export const BUCKETS = 48;
/** The first width: a batch of a few seconds is seen in tenths of a second. */
const FIRST_BUCKET_MS = 100;

export interface BatchTimeline {
  /** Width of one bucket in ms; bucket i covers [i × bucketMs, (i + 1) × bucketMs) after submission. */
  bucketMs: number;
  /** Chunks billed per bucket (their map step ended), counted once each, trailing empty buckets left out. */
  billed: number[];
  /** Chunks folded into the manifest per bucket (the reduce). */
  reduced: number[];
  /** Chunks failed (poisoned) per bucket. */
  failed: number[];
  /** ms after submission of the first and last chunk billed, folded and failed (exact, not bucketed). */
  firstBilledMs?: number;
  lastBilledMs?: number;
  firstReducedMs?: number;
  lastReducedMs?: number;
  lastFailedMs?: number;
  /** The map steps' own time (read, bill, write the result), summed over the chunks counted. */
  mapMs: number;
  /** The chunk whose map step took longest. */
  slowest?: { chunk: number; ms: number };
  /** How long finalize took (merging the results, writing the report) in the write that ended the batch. */
  finalizeMs?: number;
}

/** When a chunk's map step ended and how long it took: carried by its result pointer. */
export interface BilledAt {
  /** Epoch ms of the map instance's clock. */
  billedAt: number;
  mapMs: number;
}

type Series = 'billed' | 'reduced' | 'failed';

export function emptyTimeline(): BatchTimeline {
  return { bucketMs: FIRST_BUCKET_MS, billed: [], reduced: [], failed: [], mapMs: 0 };
}

/** Doubles the width: buckets 2j and 2j+1 become bucket j (the same counts at any order of folding). */
function widen(t: BatchTimeline): void {
  t.bucketMs *= 2;
  for (const s of ['billed', 'reduced', 'failed'] as const) {
    const merged: number[] = [];
    t[s].forEach((n, i) => (merged[i >> 1] = (merged[i >> 1] ?? 0) + n));
    t[s] = merged;
  }
}

function place(t: BatchTimeline, series: Series, offsetMs: number): void {
  while (offsetMs >= BUCKETS * t.bucketMs) widen(t);
  const i = Math.floor(offsetMs / t.bucketMs);
  const counts = t[series];
  while (counts.length <= i) counts.push(0);
  counts[i] = (counts[i] ?? 0) + 1;
}

/** ms after submission, never negative (another instance's clock may be a little behind). */
const offset = (submittedMs: number, at: number): number => Math.max(0, Math.round(at - submittedMs));

/** A chunk counted once as done: billed at `billed` (when its pointer said), folded at `at`. */
export function foldDone(
  t: BatchTimeline,
  { submittedMs, chunk, at, billed }: { submittedMs: number; chunk: number; at: number; billed?: BilledAt | undefined },
): void {
  const reduced = offset(submittedMs, at);
  place(t, 'reduced', reduced);
  t.firstReducedMs = Math.min(t.firstReducedMs ?? reduced, reduced);
  t.lastReducedMs = Math.max(t.lastReducedMs ?? reduced, reduced);
  if (!billed) return; // a pointer from before timelines: folded, with no billing time
  const b = offset(submittedMs, billed.billedAt);
  place(t, 'billed', b);
  t.firstBilledMs = Math.min(t.firstBilledMs ?? b, b);
  t.lastBilledMs = Math.max(t.lastBilledMs ?? b, b);
  const ms = Math.max(0, Math.round(billed.mapMs));
  t.mapMs += ms;
  if (!t.slowest || ms > t.slowest.ms) t.slowest = { chunk, ms };
}

/** A chunk counted once as failed, at `at`. */
export function foldFailed(t: BatchTimeline, submittedMs: number, at: number): void {
  const f = offset(submittedMs, at);
  place(t, 'failed', f);
  t.lastFailedMs = Math.max(t.lastFailedMs ?? f, f);
}
