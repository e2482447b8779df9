/**
 * The per-batch watchdog, at zero idle cost: a Service Bus message scheduled for
 * acceptance + SLA. When it fires on an unfinished batch it re-wakes the queues that still
 * hold its chunks, re-enqueues the pointers of chunks that have neither a result nor a
 * pointer in flight (blob + idempotent processing make a duplicate harmless), and schedules
 * the next check with a doubled delay. The last check fails the batch with a clear reason.
 */
import { isTerminal } from '../batch/batch-state';
import { isSettled, type Manifest } from '../batch/manifest';
import type { ManifestStore } from '../batch/manifest-store';
import type { ProgressRecorder } from '../batch/progress';
import type { WatchdogCheck } from '../bus/watchdog-check';
import { ensureError } from '../errors';
import { layout } from '../layout';
import { resultPointer, type WorkPointer } from '../model/chunk-codec';
import type { EntityNames } from '../names';
import type { Notifier, Wake } from '../notify/notifier';
import type { Finalizer } from '../pipeline/finalize';
import type { BlobStore, Logger, QueueStore } from '../ports';
import { NO_TELEMETRY, type Telemetry } from '../telemetry/telemetry';
import { mapLimit } from '../util/pool';

export type WatchdogOutcome =
  | { kind: 'gone' | 'finished' | 'not-accepted' }
  | { kind: 'nudged'; missing: number; reenqueued: number; nextInMs: number }
  | { kind: 'failed'; missing: number };

export interface WatchdogDeps {
  manifests: ManifestStore;
  progress: ProgressRecorder;
  finalizer: Finalizer;
  blobs: BlobStore;
  queues: QueueStore;
  notifier: Notifier;
  names: EntityNames;
  maxChecks: number;
  log: Logger;
  /** @defaultValue NO_TELEMETRY */
  telemetry?: Telemetry;
}

function missingChunks(m: Manifest): number[] {
  const settled = new Set([...m.done, ...m.failed.map((f) => f.chunk)]);
  return Array.from({ length: m.chunks }, (_, i) => i).filter((c) => !settled.has(c));
}

export class Watchdog {
  private readonly telemetry: Telemetry;

  constructor(private readonly deps: WatchdogDeps) {
    this.telemetry = deps.telemetry ?? NO_TELEMETRY;
  }

  async check(check: WatchdogCheck): Promise<WatchdogOutcome> {
    const { manifests, progress, finalizer, log } = this.deps;
    const got = await manifests.read(check.batchId);
    if (!got) return { kind: 'gone' };
    const m = got.manifest;
    if (isTerminal(m)) return { kind: 'finished' };
    if (m.state !== 'accepted') return { kind: 'not-accepted' };
    if (isSettled(m)) {
      await finalizer.ifSettled(m); // the finalize itself was lost (crash after the last fold)
      return { kind: 'finished' };
    }
    const missing = missingChunks(m);
    if (check.attempt >= this.deps.maxChecks) {
      const reason = `watchdog: unfinished after ${check.attempt} checks`;
      let last: Manifest | undefined;
      for (const chunk of missing) last = await progress.record(m.batchId, { chunk, done: false, reason });
      await finalizer.ifSettled(last);
      this.telemetry.metrics.stalled('failed');
      this.telemetry.batchEvent(m.traceparent, 'pushdrain.watchdog.failed', {
        'pushdrain.attempt': check.attempt,
        'pushdrain.missing': missing.length,
      });
      log.error(`batch ${m.batchId} failed: ${missing.length} of ${m.chunks} chunks ${reason}`);
      return { kind: 'failed', missing: missing.length };
    }
    const settled = m.chunks - missing.length;
    const stalled = settled <= check.settledBefore;
    const { reenqueued } = await this.repair(m, stalled);
    const next = await this.deps.notifier.scheduleCheck({
      v: 1,
      batchId: m.batchId,
      attempt: check.attempt + 1,
      settledBefore: settled,
    });
    const nextInMs = next.delayMs;
    if (next.sequenceNumbers) await this.keep(m.batchId, next.sequenceNumbers);
    if (stalled) this.telemetry.metrics.stalled('nudged');
    this.telemetry.batchEvent(m.traceparent, 'pushdrain.watchdog.nudged', {
      'pushdrain.attempt': check.attempt,
      'pushdrain.missing': missing.length,
      'pushdrain.reenqueued': reenqueued,
      'pushdrain.stalled': stalled,
    });
    log.warn(
      `batch ${m.batchId}: watchdog check ${check.attempt}: ${missing.length} chunks unfinished, ${reenqueued} pointers re-enqueued, next check in ${Math.round(nextInMs / 1000)} s`,
    );
    return { kind: 'nudged', missing: missing.length, reenqueued, nextInMs };
  }

  /**
   * Records the next check's sequence numbers in the manifest, for the finalizer to cancel. A
   * batch that finished meanwhile has been finalized without seeing them: cancel it here. Best
   * effort: a check left scheduled only finds the batch finished when it comes due.
   */
  private async keep(batchId: string, sequenceNumbers: string[]): Promise<void> {
    const { manifests, notifier, log } = this.deps;
    try {
      let finished = false;
      await manifests.update(batchId, (cur) => {
        finished = isTerminal(cur);
        return finished ? undefined : { ...cur, watchdog: sequenceNumbers };
      });
      if (finished) await notifier.cancelChecks(sequenceNumbers);
    } catch (e) {
      log.info(`batch ${batchId}: the next watchdog check stays scheduled: ${ensureError(e).message}`);
    }
  }

  /**
   * Re-enqueues lost pointers of the unsettled chunks and wakes their queues; returns how many
   * it sent and the queues it woke. `stalled` (no progress since the last check): pointers may
   * be lost even where a queue looks busy, so re-enqueue regardless; otherwise only where the
   * queue holds nothing.
   */
  async repair(m: Manifest, stalled: boolean): Promise<{ reenqueued: number; queues: string[] }> {
    const { blobs, queues, names } = this.deps;
    const { batchId } = m;
    const missing = missingChunks(m);
    const depthOf = new Map<string, Promise<number>>();
    const depth = (queue: string): Promise<number> => {
      let d = depthOf.get(queue);
      if (!d) depthOf.set(queue, (d = queues.depth(queue)));
      return d;
    };
    const wake = new Map<string, Wake>();
    let reenqueued = 0;
    await mapLimit(missing, 8, async (chunk) => {
      const hasResult = await blobs.exists(layout.result(batchId, chunk));
      const queue = hasResult ? names.resultsQueue : names.inputQueueOf(batchId, chunk);
      wake.set(queue, { queue });
      if (!stalled && (await depth(queue)) > 0) return;
      const pointer = hasResult
        ? resultPointer({ batchId, chunk, count: 1, traceparent: m.traceparent })
        : await this.workPointer(batchId, chunk, m.traceparent);
      if (!pointer) return;
      await queues.send(queue, pointer);
      reenqueued++;
    });
    await this.deps.notifier.wake([...wake.values()], batchId, m.traceparent);
    return { reenqueued, queues: [...wake.keys()] };
  }

  /** Rebuilds a work pointer from the chunk blob's metadata (sha256, count) written at ingest. */
  private async workPointer(batchId: string, chunk: number, traceparent?: string): Promise<WorkPointer | undefined> {
    const ref = layout.chunk(batchId, chunk);
    const info = await this.deps.blobs.info(ref);
    if (!info) {
      this.deps.log.error(`batch ${batchId}: chunk blob ${ref.name} is gone; the chunk cannot be redone`);
      return undefined;
    }
    const sha256 = info.metadata.sha256;
    const count = Number(info.metadata.count);
    if (!sha256 || !Number.isInteger(count) || count < 1) {
      this.deps.log.error(
        `batch ${batchId}: chunk blob ${ref.name} lacks its sha256/count metadata; cannot re-enqueue it`,
      );
      return undefined;
    }
    return {
      v: 1,
      batchId,
      chunk,
      blob: ref.name,
      count,
      sha256,
      bytes: info.size,
      ...(traceparent !== undefined ? { traceparent } : {}),
    };
  }
}
