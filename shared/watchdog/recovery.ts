/**
 * Recovery that does not depend on Service Bus. The timer sweep (and `npm start`, once, at
 * start-up, for what a stopped process left) reads the index of open batches and, for each:
 * - a notification still pending (Service Bus was down at ingest): publish it now;
 * - no chunk settled for longer than the stall threshold: redo a lost finalize, re-enqueue
 *   lost pointers, and wake the queues that hold its work again;
 * - the timer sweep then also drains those queues itself (`drainHere`), because the wake-ups
 *   it just published can be lost the same way the first ones were.
 * So a lost event (dead-lettered, expired, or dropped by a broker) delays a batch by at most
 * one sweep interval plus the threshold, never forever, even while the bus keeps losing them.
 */
import { isTerminal } from '../batch/batch-state';
import { isSettled, type Manifest } from '../batch/manifest';
import type { ManifestStore } from '../batch/manifest-store';
import type { OpenBatches } from '../batch/open-batches';
import { ensureError } from '../errors';
import type { EventDelivery } from '../events/event-delivery';
import { hasPendingDeliveries, topicUnsent } from '../events/outbox';
import { isStaleClaim, STALE_INGEST_MS } from '../ingest/claim';
import type { EntityNames, Stage } from '../names';
import type { Notifier } from '../notify/notifier';
import type { Finalizer } from '../pipeline/finalize';
import type { Logger } from '../ports';
import type { Telemetry } from '../telemetry/telemetry';
import type { Watchdog } from './check-batch';

export type RecoveryAction =
  | { batchId: string; kind: 'notified' | 'finished' | 'closed' | 'progressing' | 'claimed' }
  | { batchId: string; kind: 'repaired'; reenqueued: number }
  | { batchId: string; kind: 'delivering'; started: number }
  | { batchId: string; kind: 'failed'; error: string };

export interface RecoveryDeps {
  open: OpenBatches;
  manifests: ManifestStore;
  finalizer: Finalizer;
  /** Re-attempts a terminal batch's lost deliveries and topic copy (it stays in the index while one is owed). */
  events: Pick<EventDelivery, 'recover'>;
  notifier: Notifier;
  watchdog: Watchdog;
  names: EntityNames;
  /** Drains a queue in this process, as a WorkDetected event for it would. */
  drain: (queue: string, stage: Stage) => Promise<unknown>;
  /** Open batches looked at per run (the rest wait for the next run). */
  maxBatches: number;
  /** PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS, in ms: an older ingest claim's request died. @defaultValue STALE_INGEST_MS */
  claimStaleMs?: number;
  now: () => number;
  log: Logger;
  /** @defaultValue NO_TELEMETRY */
  telemetry?: Telemetry;
}

/** When the batch last showed life: its last settled chunk, else its acceptance. */
function lastProgress(m: Manifest): number {
  return Date.parse(m.progressAt ?? m.acceptedAt ?? m.submittedAt);
}

/** Which open batches count as stalled in one run. */
export interface StallRule {
  /** No progress for this long: stalled. */
  stallMs: number;
  /**
   * Last progress before this time (epoch ms): left by a process that is gone, so stalled at
   * once. Only a caller that knows nothing else worked on the batches since then may say so
   * (`npm start` on its own storage, at start-up).
   */
  leftBefore?: number;
}

export class Recovery {
  constructor(private readonly deps: RecoveryDeps) {}

  /**
   * One pass over the index: repairs what the rule calls stalled and leaves healthy work alone,
   * without a word. `drainHere`: also drain the repaired batches' queues in this invocation.
   */
  async run(rule: StallRule, options: { drainHere?: boolean } = {}): Promise<RecoveryAction[]> {
    const actions: RecoveryAction[] = [];
    const woken = new Set<string>();
    for (const batchId of await this.deps.open.list(this.deps.maxBatches)) {
      try {
        actions.push(await this.one(batchId, rule, woken));
      } catch (e) {
        // One batch's trouble (a Storage hiccup) must not stop the others; the next run retries it.
        const error = ensureError(e).message;
        this.deps.log.warn(`recovery of batch ${batchId} failed, retried next run: ${error}`);
        actions.push({ batchId, kind: 'failed', error });
      }
    }
    if (options.drainHere && woken.size > 0) await this.drainHere(woken);
    return actions;
  }

  /**
   * The wake-ups a repair publishes travel the same bus that lost the first ones (a broker
   * that drops, a subscription that dead-letters): not relying on them is what keeps recovery
   * independent of Service Bus. The results queue is drained alongside the input queues (it
   * folds what their map step produces meanwhile) and once more after them, for what arrived
   * as its drain went idle: at most two drain budgets in all, inside the function timeout with
   * the defaults. A drain cut short hands over as any drain does; a drain that fails is retried
   * by the next run, since the batch still shows no progress.
   */
  private async drainHere(queues: ReadonlySet<string>): Promise<void> {
    const { names, drain, log } = this.deps;
    const one = async (queue: string, stage: Stage): Promise<void> => {
      try {
        await drain(queue, stage);
      } catch (e) {
        log.warn(`recovery: draining ${queue} failed, retried next run: ${ensureError(e).message}`);
      }
    };
    const folding = one(names.resultsQueue, 'reduce');
    await Promise.all([...queues].filter((q) => names.stageOf(q) === 'map').map((q) => one(q, 'map')));
    await one(names.resultsQueue, 'reduce'); // joins the drain above while it lives
    await folding;
  }

  private async one(batchId: string, rule: StallRule, woken: Set<string>): Promise<RecoveryAction> {
    const { open, manifests, finalizer, notifier, watchdog, now, log } = this.deps;
    const m = (await manifests.read(batchId))?.manifest;
    if (m && isTerminal(m) && (hasPendingDeliveries(m) || topicUnsent(m).length > 0))
      return { batchId, kind: 'delivering', started: this.deps.events.recover(m, rule.leftBefore) };
    if (!m || isTerminal(m) || m.state === 'abandoned') {
      await open.remove(batchId); // finished (a crash came between the finalize and this removal), or never accepted
      return { batchId, kind: 'closed' };
    }
    if (m.state === 'ingesting') {
      // Indexed just before acceptance: a live request will accept it; a dead one's client retries.
      if (!isStaleClaim(m, now(), this.deps.claimStaleMs ?? STALE_INGEST_MS)) return { batchId, kind: 'claimed' };
      await open.remove(batchId);
      return { batchId, kind: 'closed' };
    }
    if (m.notification === 'pending') {
      // A check recorded at the accept (only the wake-up failed) is on its way: wake, schedule no second one.
      let watchdog: string[] | undefined;
      if (m.watchdog) await notifier.wake(m.queues, batchId, m.traceparent);
      else watchdog = await notifier.accepted(batchId, m.queues, m.traceparent);
      this.deps.telemetry?.batchEvent(m.traceparent, 'pushdrain.recovery.notified');
      await manifests.update(batchId, (cur) =>
        cur.notification === 'sent' ? undefined : { ...cur, notification: 'sent', ...(watchdog ? { watchdog } : {}) },
      );
      log.warn(`batch ${batchId}: notification that failed at ingest published by recovery`);
      return { batchId, kind: 'notified' };
    }
    const last = lastProgress(m);
    const idleS = Math.round((now() - last) / 1000);
    const stalled = now() - last >= rule.stallMs;
    // A batch that moved after the cut-off has a live worker, however recent its last progress.
    const left = rule.leftBefore !== undefined && last < rule.leftBefore;
    if (!stalled && !left) return { batchId, kind: 'progressing' };
    if (isSettled(m)) {
      await finalizer.ifSettled(m); // the finalize itself was lost
      return { batchId, kind: 'finished' };
    }
    const { reenqueued, queues } = await watchdog.repair(m, false);
    for (const q of queues) woken.add(q);
    const why = stalled
      ? `no progress for ${idleS} s`
      : `left open by a stopped process (no progress since ${new Date(last).toISOString()})`;
    if (stalled) this.deps.telemetry?.metrics.stalled('recovered');
    this.deps.telemetry?.batchEvent(m.traceparent, 'pushdrain.recovery.repaired', {
      'pushdrain.reenqueued': reenqueued,
      'pushdrain.stalled': stalled,
    });
    log.warn(`batch ${batchId}: ${why}; recovery woke its queues and re-enqueued ${reenqueued} lost pointers`);
    return { batchId, kind: 'repaired', reenqueued };
  }
}
