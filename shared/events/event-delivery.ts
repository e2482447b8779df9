/**
 * Delivers the outbox (see outbox.ts): push-driven, never polled. Right after the write that made
 * a batch terminal lands, each due delivery is attempted at once, in the background, each on its
 * own (one slow receiver delays neither the others nor the pipeline). A failed attempt records its
 * status and error on the manifest, then schedules its retry as a Service Bus message on the
 * watchdog queue (free until it fires); the last one sends the delivery to `deliveries-poison`.
 * Recovery (the sweep, and `npm start` after a crash) takes every pending delivery: one due is
 * attempted (at start-up at once, since its process is gone; in a sweep once past a grace, since a
 * live process may hold it), and one not due has its retry scheduled again for the same moment, under
 * a new key written to the delivery first. Its original message may be lost (a crash between the
 * record of a failed attempt and its scheduling), so a pending delivery never depends on one
 * message; the key makes the original stale, so both firing still make one attempt. Every attempt
 * checks, and records, against the attempt count and key it started from: a duplicate retry message
 * or a concurrent recovery is a no-op.
 *
 * The `batch-events` topic is not a delivery: its copy is published right after the terminal
 * write (after the webhook requests of that turn are on their way), and the batch leaves the
 * open-batch index only once it is, so a marker is all recovery needs to send it again (with the
 * stored id and bytes: a duplicate at worst). That saves the manifest write a delivery's record
 * would cost on every batch.
 */
import { randomUUID } from 'node:crypto';

import type { Manifest } from '../batch/manifest';
import type { ManifestStore } from '../batch/manifest-store';
import type { OpenBatches } from '../batch/open-batches';
import type { Report } from '../billing/report';
import { type DeliveryRetry, type DeliveryRetryMessage, deliveryRetryMessage } from '../bus/delivery-retry';
import { ensureError } from '../errors';
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
  topicUnsent,
} from './outbox';
import { type BatchEventTopic, TopicSender } from './topic-sender';

/**
 * How long after its due time a delivery's attempt may still be under way (the retry message's
 * latency, a manifest read, a POST of at most 10 s, the record): a sweep leaves it alone meanwhile,
 * or a slow receiver would get a second, overlapping attempt.
 */
const IN_FLIGHT_MS = 30_000;

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
  /** Where every batch's event goes (the operator's webhooks); a batch's callback is added to these. */
  targets: () => { kind: DeliveryKind; target: string }[];
  /** The topic that gets every batch's event too (`batch-events`), and its send; undefined without Service Bus. */
  topic?: BatchEventTopic | undefined;
  /** One attempt of one delivery; never throws. */
  attempt: (d: Delivery, e: OutboxEvent) => Promise<AttemptResult>;
  scheduleRetry: (message: DeliveryRetryMessage, delayMs: number) => Promise<void>;
  /** Opens connections to these receivers while the terminal write is under way (sends nothing). */
  warm?: ((targets: readonly { kind: DeliveryKind; target: string }[]) => void) | undefined;
  poison: (record: DeliveryPoisonRecord) => Promise<void>;
  retryScheduleSeconds: readonly number[];
  /** A pending delivery this long past due counts as lost (its attempt or retry message died with its process). */
  lostAfterMs: number;
  now: () => number;
  log: Logger;
  /** Told each recorded attempt's outcome, by target kind (the `pushdrain.webhook.deliveries` metric). */
  counted?: (kind: DeliveryKind, outcome: 'delivered' | 'retry' | 'gone' | 'poisoned') => void;
}

/**
 * A URL as its origin, with `/…` for a path: for log lines and poison records, which outlive the
 * setting (a webhook URL's path may be its secret: Slack's, Teams').
 */
export function logTarget(target: string): string {
  try {
    const u = new URL(target);
    return `${u.origin}${u.pathname === '/' ? '' : '/…'}`;
  } catch {
    return target;
  }
}

/** A URL without its query or fragment, for the operator's own test answer (admin key only). */
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
  private readonly topicSender: TopicSender;

  constructor(private readonly deps: EventDeliveryDeps) {
    this.topicSender = new TopicSender(deps.topic, deps.log);
  }

  /**
   * The outbox entry for `m`, just marked terminal (in the same write): undefined when nothing
   * listens. `traceparent` is the context of the work that produced the event (its finalize span).
   */
  record(m: Manifest, report: Report | undefined, traceparent?: string): OutboxEvent | undefined {
    const targets = this.deps.targets();
    if (m.callbackUrl) targets.push({ kind: 'callback', target: m.callbackUrl });
    const event = outboxEvent(m, report, {
      targets,
      ...(this.deps.topic ? { topic: this.deps.topic.name } : {}),
      ...(traceparent ? { traceparent } : {}),
    });
    // The write that makes the outbox durable comes next: the handshakes happen meanwhile.
    if (event) this.deps.warm?.(targets);
    return event;
  }

  /**
   * After the write that made `m` terminal landed (and after `dispatch`): sends its topic copy in
   * the background, then removes the open marker if no delivery is pending. True when it took
   * charge of the marker that way; false when there is no topic copy to send.
   */
  announce(m: Manifest): boolean {
    const unsent = topicUnsent(m);
    if (unsent.length === 0) return false;
    this.background(this.sendThenClose(m.batchId, unsent, !hasPendingDeliveries(m)));
    return true;
  }

  /** After a write that holds pending deliveries landed: attempt those due now, in the background. */
  dispatch(m: Manifest, dueBy = this.deps.now()): number {
    let started = 0;
    for (const { e, d, index } of pending(m)) {
      if (Date.parse(d.dueAt) > dueBy) continue;
      started++;
      // The manifest in hand is the one just written: no read before the first POST.
      this.background(this.attempt(m.batchId, retryOf(e, d, index), m));
    }
    return started;
  }

  /**
   * Recovery's part: every pending delivery of `m` is attempted if due, or has its retry scheduled
   * again (same moment, new key) if not. `leftBefore` (start-up after a crash) means no live process
   * holds a due delivery. Otherwise (a sweep) one due less than IN_FLIGHT_MS ago is left to the
   * attempt that may be under way, one due longer ago but within the grace is scheduled again at once
   * (its message was lost, or is late: the new key keeps that to one attempt), and one past the grace
   * is attempted here. Returns how many deliveries and topic copies it took charge of.
   */
  recover(m: Manifest, leftBefore?: number): number {
    const now = this.deps.now();
    const startUp = leftBefore !== undefined;
    const lostBy = startUp ? now : now - this.deps.lostAfterMs;
    let started = 0;
    for (const { e, d, index } of pending(m)) {
      const due = Date.parse(d.dueAt);
      // Due a moment ago: its message fired and its attempt may be under way; the next run sees it.
      if (!startUp && due <= now && due > now - IN_FLIGHT_MS) continue;
      started++;
      // Due and lost: attempted here, under a new key (its message, if it still fires, is stale).
      this.background(this.takeUnderNewKey(m.batchId, retryOf(e, d, index), d.dueAt, due <= lostBy));
    }
    // A topic copy still owed past the grace: its process died (or its send failed) before the marker went.
    const unsent = topicUnsent(m);
    const lost = leftBefore !== undefined || now - Date.parse(m.completedAt ?? m.submittedAt) >= this.deps.lostAfterMs;
    if (unsent.length === 0 || !lost) return started;
    this.background(this.sendThenClose(m.batchId, unsent, !hasPendingDeliveries(m)));
    return started + unsent.length;
  }

  /**
   * Takes the delivery `r` names under a new key, written first, so the message that was to attempt
   * it, if it still fires, is stale; then attempts it here (`now`), or schedules its retry again for
   * `dueAt` (its schedule is kept). A crash in between leaves no live message, and the next recovery
   * takes it again.
   */
  private async takeUnderNewKey(batchId: string, r: DeliveryRetry, dueAt: string, now: boolean): Promise<void> {
    const key = randomUUID();
    const updated = await this.deps.manifests.update(batchId, (cur) => {
      const found = locate(cur, r);
      if (!found || found.d.dueAt !== dueAt) return undefined; // attempted meanwhile
      found.d.retryKey = key;
      return cur;
    });
    if (!updated) return;
    if (now) {
      await this.attempt(batchId, { ...r, key }, updated.manifest);
      return;
    }
    await this.deps.scheduleRetry(
      deliveryRetryMessage(batchId, { ...r, key }),
      Math.max(0, Date.parse(dueAt) - this.deps.now()),
    );
  }

  /** A scheduled retry fired (the watchdog queue): attempt it in this invocation. */
  retry(message: DeliveryRetryMessage): Promise<DeliveryOutcome> {
    return this.attempt(message.batchId, message);
  }

  /** Resolves when every background attempt started so far has ended (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  private async sendThenClose(batchId: string, events: readonly OutboxEvent[], close: boolean): Promise<void> {
    const sent = await Promise.all(events.map((e) => this.topicSender.send(batchId, e)));
    if (close && sent.every(Boolean)) await this.removeMarker(batchId);
  }

  private async removeMarker(batchId: string): Promise<void> {
    await this.deps.open
      .remove(batchId)
      .catch((e: unknown) =>
        this.deps.log.warn(
          `batch ${batchId}: its open-index marker stays for recovery to remove: ${ensureError(e).message}`,
        ),
      );
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
    const sent = await this.topicSender.sentHere(current);
    const updated = await manifests.update(batchId, (cur) => {
      const here = locate(cur, r);
      if (!here) return undefined; // another attempt recorded first
      cur.events?.[eventIndex(cur, r.eventId)]?.deliveries.splice(r.index, 1, probe);
      // This write is made anyway: it also says what the topic has, so another process may close the batch.
      for (const e of cur.events ?? []) if (sent.has(e.id)) e.topicSent = true;
      return cur;
    });
    if (!updated || !sameDelivery(updated.manifest, r, probe)) return { kind: 'stale' };
    this.deps.counted?.(found.d.kind, step.kind === 'finished' ? (probe.state as 'delivered' | 'gone') : step.kind);
    const where = `${found.e.type} ${found.e.id} of batch ${batchId} to ${logTarget(found.d.target)}`;
    if (!hasPendingDeliveries(updated.manifest) && (await this.topicSender.allSent(updated.manifest)))
      await this.removeMarker(batchId);
    switch (step.kind) {
      case 'finished':
        if (probe.state === 'gone')
          log.warn(`${where}: ${describeAttempt(result)}, that endpoint gets no more attempts`);
        return { kind: probe.state === 'gone' ? 'gone' : 'delivered', ...statusOf(result) };
      case 'poisoned':
        log.error(
          `${where}: poisoned after ${probe.attempts} attempts, last ${describeAttempt(result)} (redrive sends it again)`,
        );
        return { kind: 'poisoned', ...statusOf(result) };
      case 'retry': {
        const next = deliveryRetryMessage(batchId, { eventId: r.eventId, index: r.index, attempts: probe.attempts });
        // A failed schedule leaves the delivery pending and past due: recovery takes it from there.
        await this.deps.scheduleRetry(next, step.delayMs);
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

/** The pending delivery `r` names, if it is still at the attempt count and retry key `r` saw. */
function locate(m: Manifest, r: DeliveryRetry): { e: OutboxEvent; d: Delivery } | undefined {
  const e = m.events?.find((x) => x.id === r.eventId);
  const d = e?.deliveries[r.index];
  return e && d && d.state === 'pending' && d.attempts === r.attempts && d.retryKey === r.key ? { e, d } : undefined;
}

function* pending(m: Manifest): Generator<{ e: OutboxEvent; d: Delivery; index: number }> {
  for (const e of m.events ?? [])
    for (const [index, d] of e.deliveries.entries()) if (d.state === 'pending') yield { e, d, index };
}

/** What names `d` as it stands: the retry a message for it now would carry. */
function retryOf(e: OutboxEvent, d: Delivery, index: number): DeliveryRetry {
  return { eventId: e.id, index, attempts: d.attempts, ...(d.retryKey !== undefined ? { key: d.retryKey } : {}) };
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
    target: logTarget(d.target),
    attempts: d.attempts,
    ...(d.lastStatus !== undefined ? { lastStatus: d.lastStatus } : {}),
    ...(d.lastError !== undefined ? { lastError: d.lastError } : {}),
    at: d.dueAt,
  };
}
