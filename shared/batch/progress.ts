/**
 * Records chunk outcomes on the manifest, coalescing concurrent calls for one batch into a
 * single read-modify-write. A results drain settles up to 32 chunks at once; one write for
 * all of them saves transactions and avoids a storm of ETag conflicts between them. The write
 * that settles a batch also completes it (a Settler writes the report first), so a batch's
 * last chunk costs one manifest write, not two.
 */
import { isTerminal } from './batch-state';
import type { FailedChunk, Manifest } from './manifest';
import type { ManifestStore, VersionedManifest } from './manifest-store';
import { type BilledAt, emptyTimeline, foldDone, foldFailed } from './timeline';

/** Completes a settled manifest before it is written (the Finalizer). */
export interface Settler {
  /** The manifest to write instead: completed or failed when `m` is settled. */
  settle(m: Manifest): Promise<Manifest>;
  /** That write landed (never throws: the waiters must be answered whatever it does). */
  settled(m: Manifest): Promise<void>;
}

/** A done chunk carries when it was billed (its result pointer's time), for the batch's timeline. */
export type ChunkOutcome = { chunk: number; done: true; billed?: BilledAt } | ({ done: false } & FailedChunk);

interface Waiter {
  outcome: ChunkOutcome;
  resolve: (m: Manifest | undefined) => void;
  reject: (e: unknown) => void;
}

/**
 * Adds outcomes to a manifest; each chunk counts once, whatever the delivery count. With `at`
 * (the write's time), each newly counted chunk is folded into the timeline by the same write.
 */
function applyOutcomes(m: Manifest, outcomes: readonly ChunkOutcome[], at?: number): Manifest | undefined {
  if (isTerminal(m) || m.state === 'abandoned') return undefined;
  const done = new Set(m.done);
  const failed = new Map(m.failed.map((f) => [f.chunk, f]));
  let changed = false;
  for (const o of outcomes) {
    if (done.has(o.chunk) || failed.has(o.chunk)) continue;
    changed = true;
    if (o.done) done.add(o.chunk);
    else failed.set(o.chunk, { chunk: o.chunk, reason: o.reason });
    if (at !== undefined) {
      m.timeline ??= emptyTimeline();
      if (o.done)
        foldDone(m.timeline, { submittedMs: Date.parse(m.submittedAt), chunk: o.chunk, at, billed: o.billed });
      else foldFailed(m.timeline, Date.parse(m.submittedAt), at);
    }
  }
  if (!changed) return undefined;
  m.done = [...done].sort((a, b) => a - b);
  m.failed = [...failed.values()].sort((a, b) => a.chunk - b.chunk);
  return m;
}

export class ProgressRecorder {
  private readonly pending = new Map<string, Waiter[]>();
  private readonly flushing = new Set<string>();

  constructor(
    private readonly store: ManifestStore,
    private readonly now: () => number,
    private readonly settler: Settler,
  ) {}

  /** Resolves with the manifest as persisted (undefined if the batch has no manifest). */
  record(batchId: string, outcome: ChunkOutcome): Promise<Manifest | undefined> {
    return new Promise((resolve, reject) => {
      const list = this.pending.get(batchId) ?? [];
      list.push({ outcome, resolve, reject });
      this.pending.set(batchId, list);
      if (!this.flushing.has(batchId)) void this.flush(batchId);
    });
  }

  private async flush(batchId: string): Promise<void> {
    this.flushing.add(batchId);
    try {
      // Callers that arrive while a write is in flight are served by the next round.
      for (let waiters = this.take(batchId); waiters.length > 0; waiters = this.take(batchId)) {
        let result: VersionedManifest | undefined;
        // Of the last attempt (a conflict re-reads and re-applies): did it complete the batch?
        let completes = false;
        try {
          const now = this.now();
          const at = new Date(now).toISOString();
          result = await this.store.update(batchId, async (m) => {
            const next = applyOutcomes(
              m,
              waiters.map((w) => w.outcome),
              now,
            );
            if (next) next.progressAt = at; // what the sweep's stall check reads
            const out = next && (await this.settler.settle(next));
            completes = out !== undefined && isTerminal(out);
            return out;
          });
        } catch (e) {
          for (const w of waiters) w.reject(e);
          continue;
        }
        if (completes && result) await this.settler.settled(result.manifest);
        for (const w of waiters) w.resolve(result?.manifest);
      }
    } finally {
      this.flushing.delete(batchId);
    }
  }

  private take(batchId: string): Waiter[] {
    const list = this.pending.get(batchId) ?? [];
    this.pending.delete(batchId);
    return list;
  }
}
