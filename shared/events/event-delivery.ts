/**
 * Delivers the outbox (see outbox.ts): push-driven, never polled. Right after the write that made
 * a batch terminal lands, each due delivery is attempted at once, in the background, each on its
 * own (one slow receiver delays neither the others nor the pipeline). A failed attempt records its
 * status and error on the manifest, then schedules its retry as a Service Bus message on the
 * watchdog queue (free until it fires); the last one sends the delivery to `deliveries-poison`.
 * Recovery (the sweep, and `npm start` after a crash) re-attempts a pending delivery whose
 * attempt or scheduled retry was lost. Every attempt checks, and records, against the attempt
 * count it started from: a duplicate retry message or a concurrent recovery is a no-op.
 */
import type { Manifest, ManifestStore, OpenBatches } from '../batch/manifest';
import type { Report } from '../billing/report';
import { ensureError } from '../errors';
import type { WatchdogCheck } from '../notify/events';
import type { Logger } from '../ports';
import { outboxEvent } from './batch-event';
import {
  applyAttempt,
  type AttemptResult,
  type Delivery,
  type DeliveryKind,
  describeAttempt,
  hasPendingDeliveries,
  type OutboxEvent,
} from './outbox';

/** A delivery's scheduled retry, carried by a watchdog-queue message. */
export interface DeliveryRetry {
  eventId: string;
  /** The delivery's index in its event's list. */
  index: number;
  /** Attempts made when the retry was scheduled: a message that disagrees with the manifest is stale. */
  attempts: number;
}

/** What `deliveries-poison` holds: the delivery, and its last status and error. */
export interface DeliveryPoisonRecord {
  kind: 'delivery';
  batchId: string;
  eventId: string;
  type: string;
  index: number;
  deliveryKind: DeliveryKind;
  /** The endpoint's origin and path (a query may carry a token). */
  target: string;
  attempts: number;
  lastStatus?: number;
  lastError?: string;
  at: string;
}

export type DeliveryOutcome =
  | { kind: 'stale' }
  | { kind: 'delivered' | 'gone' | 'poisoned'; status?: number }
  | { kind: 'retrying'; inMs: number; lastError: string };

export interface EventDeliveryDeps {
  manifests: ManifestStore;
  open: OpenBatches;
  /** Where every batch's event goes (the operator's webhooks, the topic); a batch's callback is added to these. */
  targets: () => { kind: DeliveryKind; target: string }[];
  /** One attempt of one delivery; never throws. */
  attempt: (d: Delivery, e: OutboxEvent) => Promise<AttemptResult>;
  scheduleRetry: (check: WatchdogCheck, delayMs: number) => Promise<void>;
  poison: (record: DeliveryPoisonRecord) => Promise<void>;
  retryScheduleSeconds: readonly number[];
  /** A pending delivery this long past due counts as lost (its attempt or retry message died with its process). */
  lostAfterMs: number;
  now: () => number;
  log: Logger;
  /** Told each recorded attempt's outcome, by target kind (the `pushdrain.webhook.deliveries` metric). */
  counted?: (kind: DeliveryKind, outcome: 'delivered' | 'retry' | 'gone' | 'poisoned') => void;
}

/** A URL without its query or fragment, for records and logs (a webhook URL may carry a token). */
export function displayTarget(target: string): string {
  try {
    const u = new URL(target);
    return `${u.origin}${u.pathname}`;
  } catch {
    return target;
  }
}

export class EventDelivery {
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(private readonly deps: EventDeliveryDeps) {}

  /** The outbox entry for `m`, just marked terminal (in the same write): undefined when nothing listens. */
  record(m: Manifest, report: Report | undefined): OutboxEvent | undefined {
    const targets = this.deps.targets();
    if (m.callbackUrl) targets.push({ kind: 'callback', target: m.callbackUrl });
    return outboxEvent(m, report, targets);
  }

  /** After a write that holds pending deliveries landed: attempt those due now, in the background. */
  dispatch(m: Manifest, dueBy = this.deps.now()): number {
    let started = 0;
    for (const e of m.events ?? [])
      e.deliveries.forEach((d, index) => {
        if (d.state !== 'pending' || Date.parse(d.dueAt) > dueBy) return;
        started++;
        // The manifest in hand is the one just written: no read before the first POST.
        this.background(this.attempt(m.batchId, { eventId: e.id, index, attempts: d.attempts }, m));
      });
    return started;
  }

  /**
   * Recovery's part: re-attempt what a lost attempt or retry message left pending. `leftBefore`
   * (start-up after a crash) means every due delivery was lost; otherwise only those past the
   * grace. Returns how many were started.
   */
  recover(m: Manifest, leftBefore?: number): number {
    const now = this.deps.now();
    return this.dispatch(m, leftBefore !== undefined ? now : now - this.deps.lostAfterMs);
  }

  /** A scheduled retry fired (the watchdog queue): attempt it in this invocation. */
  retry(batchId: string, r: DeliveryRetry): Promise<DeliveryOutcome> {
    return this.attempt(batchId, r);
  }

  /** Resolves when every background attempt started so far has settled (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  private background(p: Promise<unknown>): void {
    const tracked = p.catch((e: unknown) =>
      // The delivery stays pending on the manifest: recovery re-attempts it.
      this.deps.log.warn(`event delivery failed, left for recovery: ${ensureError(e).message}`),
    );
    this.inflight.add(tracked);
    void tracked.finally(() => this.inflight.delete(tracked));
  }

  private async attempt(batchId: string, r: DeliveryRetry, known?: Manifest): Promise<DeliveryOutcome> {
    const { manifests, retryScheduleSeconds, now, log } = this.deps;
    const current = known ?? (await manifests.read(batchId))?.manifest;
    const found = current && locate(current, r);
    if (!found) return { kind: 'stale' };
    const result = await this.deps.attempt(found.d, found.e);
    const probe = structuredClone(found.d);
    const step = applyAttempt(probe, result, retryScheduleSeconds, now());
    // Poison first, record second: a crash in between leaves a duplicate poison record, never a loss.
    if (step.kind === 'poisoned') await this.deps.poison(poisonRecord(batchId, found.e, r.index, probe));
    const updated = await manifests.update(batchId, (cur) => {
      const here = locate(cur, r);
      if (!here) return undefined; // another attempt recorded first
      cur.events?.[eventIndex(cur, r.eventId)]?.deliveries.splice(r.index, 1, probe);
      return cur;
    });
    if (!updated || !sameDelivery(updated.manifest, r, probe)) return { kind: 'stale' };
    this.deps.counted?.(found.d.kind, step.kind === 'settled' ? (probe.state as 'delivered' | 'gone') : step.kind);
    const where = `${found.e.type} ${found.e.id} of batch ${batchId} to ${displayTarget(found.d.target)}`;
    if (!hasPendingDeliveries(updated.manifest))
      await this.deps.open
        .remove(batchId)
        .catch((e: unknown) =>
          log.warn(`batch ${batchId}: its open-index marker stays for recovery to remove: ${ensureError(e).message}`),
        );
    switch (step.kind) {
      case 'settled':
        if (probe.state === 'gone') log.warn(`${where}: 410 Gone, that endpoint gets no more attempts`);
        return { kind: probe.state === 'gone' ? 'gone' : 'delivered', ...statusOf(result) };
      case 'poisoned':
        log.error(
          `${where}: poisoned after ${probe.attempts} attempts, last ${describeAttempt(result)} (redrive sends it again)`,
        );
        return { kind: 'poisoned', ...statusOf(result) };
      case 'retry': {
        const check: WatchdogCheck = {
          v: 1,
          batchId,
          attempt: probe.attempts,
          settledBefore: 0,
          delivery: { eventId: r.eventId, index: r.index, attempts: probe.attempts },
        };
        // A failed schedule leaves the delivery pending and past due: recovery takes it from there.
        await this.deps.scheduleRetry(check, step.delayMs);
        log.warn(
          `${where}: attempt ${probe.attempts} failed (${describeAttempt(result)}), retry in ${step.delayMs} ms`,
        );
        return { kind: 'retrying', inMs: step.delayMs, lastError: describeAttempt(result) };
      }
    }
  }
}

function statusOf(result: AttemptResult): { status?: number } {
  return result.status !== undefined ? { status: result.status } : {};
}

function eventIndex(m: Manifest, eventId: string): number {
  return (m.events ?? []).findIndex((e) => e.id === eventId);
}

/** The pending delivery `r` names, if it is still at the attempt count `r` saw. */
function locate(m: Manifest, r: DeliveryRetry): { e: OutboxEvent; d: Delivery } | undefined {
  const e = m.events?.find((x) => x.id === r.eventId);
  const d = e?.deliveries[r.index];
  return e && d && d.state === 'pending' && d.attempts === r.attempts ? { e, d } : undefined;
}

function sameDelivery(m: Manifest, r: DeliveryRetry, d: Delivery): boolean {
  const got = m.events?.find((x) => x.id === r.eventId)?.deliveries[r.index];
  return got !== undefined && got.attempts === d.attempts && got.state === d.state && got.dueAt === d.dueAt;
}

function poisonRecord(batchId: string, e: OutboxEvent, index: number, d: Delivery): DeliveryPoisonRecord {
  return {
    kind: 'delivery',
    batchId,
    eventId: e.id,
    type: e.type,
    index,
    deliveryKind: d.kind,
    target: displayTarget(d.target),
    attempts: d.attempts,
    ...(d.lastStatus !== undefined ? { lastStatus: d.lastStatus } : {}),
    ...(d.lastError !== undefined ? { lastError: d.lastError } : {}),
    at: d.dueAt,
  };
}
