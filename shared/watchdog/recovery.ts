/**
 * Recovery that does not depend on Service Bus. The timer sweep (and `npm start`, once, at
 * start-up) reads the index of open batches and, for each:
 * - a notification still pending (Service Bus was down at ingest): publish it now;
 * - no chunk settled for longer than the stall threshold: redo a lost finalize, re-enqueue
 *   lost pointers, and wake the queues that hold its work again.
 * So a lost event (dead-lettered, expired, or dropped by a broker) delays a batch by at most
 * one sweep interval plus the threshold, never forever.
 */
import { isSettled, isTerminal, type Manifest, type ManifestStore } from '../batch/manifest';
import type { OpenBatches } from '../batch/open-batches';
import { ensureError } from '../errors';
import { STALE_INGEST_MS } from '../ingest/claim';
import type { Notifier } from '../notify/events';
import type { Finalizer } from '../pipeline/finalize';
import type { Logger } from '../ports';
import type { Watchdog } from './check-batch';

export type RecoveryAction =
  | { batchId: string; kind: 'notified' | 'finished' | 'closed' | 'progressing' | 'claimed' }
  | { batchId: string; kind: 'repaired'; reenqueued: number }
  | { batchId: string; kind: 'failed'; error: string };

export interface RecoveryDeps {
  open: OpenBatches;
  manifests: ManifestStore;
  finalizer: Finalizer;
  notifier: Notifier;
  watchdog: Watchdog;
  /** Open batches looked at per run (the rest wait for the next run). */
  maxBatches: number;
  now: () => number;
  log: Logger;
}

/** When the batch last showed life: its last settled chunk, else its acceptance. */
function lastProgress(m: Manifest): number {
  return Date.parse(m.progressAt ?? m.acceptedAt ?? m.submittedAt);
}

export class Recovery {
  constructor(private readonly deps: RecoveryDeps) {}

  /** One pass over the index; `stallMs` 0 repairs every open batch (start-up after a crash). */
  async run(stallMs: number): Promise<RecoveryAction[]> {
    const actions: RecoveryAction[] = [];
    for (const batchId of await this.deps.open.list(this.deps.maxBatches)) {
      try {
        actions.push(await this.one(batchId, stallMs));
      } catch (e) {
        // One batch's trouble (a Storage hiccup) must not stop the others; the next run retries it.
        const error = ensureError(e).message;
        this.deps.log.warn(`recovery of batch ${batchId} failed, retried next run: ${error}`);
        actions.push({ batchId, kind: 'failed', error });
      }
    }
    return actions;
  }

  private async one(batchId: string, stallMs: number): Promise<RecoveryAction> {
    const { open, manifests, finalizer, notifier, watchdog, now, log } = this.deps;
    const m = (await manifests.read(batchId))?.manifest;
    if (!m || isTerminal(m) || m.state === 'abandoned') {
      await open.remove(batchId); // finished (a crash came between the finalize and this removal), or never accepted
      return { batchId, kind: 'closed' };
    }
    if (m.state === 'ingesting') {
      // Indexed just before acceptance: a live request will accept it; a dead one's client retries.
      if (now() - Date.parse(m.aliveAt ?? m.submittedAt) < STALE_INGEST_MS) return { batchId, kind: 'claimed' };
      await open.remove(batchId);
      return { batchId, kind: 'closed' };
    }
    if (m.notification === 'pending') {
      await notifier.accepted(batchId, m.queues);
      await manifests.update(batchId, (cur) => (cur.notification === 'sent' ? undefined : { ...cur, notification: 'sent' }));
      log.warn(`batch ${batchId}: notification that failed at ingest published by recovery`);
      return { batchId, kind: 'notified' };
    }
    if (now() - lastProgress(m) < stallMs) return { batchId, kind: 'progressing' };
    if (isSettled(m)) {
      await finalizer.ifSettled(m); // the finalize itself was lost
      return { batchId, kind: 'finished' };
    }
    const reenqueued = await watchdog.repair(m, false);
    log.warn(`batch ${batchId}: no progress for ${Math.round((now() - lastProgress(m)) / 1000)} s; recovery woke its queues and re-enqueued ${reenqueued} lost pointers`);
    return { batchId, kind: 'repaired', reenqueued };
  }
}
