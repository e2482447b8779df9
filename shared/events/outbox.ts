/**
 * The outbox: a batch's completed/failed event and its deliveries, kept on the manifest. The write
 * that makes the batch terminal records them, so "terminal" and "an event to deliver" can never be
 * apart: a crash after that write leaves a pending delivery that recovery finds (the batch stays
 * in the open-batch index until no delivery is pending). The rules of one attempt's outcome are
 * pure functions here; event-delivery.ts does the I/O.
 */
/**
 * webhook: the operator's PUSHDRAIN_WEBHOOK_URL; callback: the batch's Callback-Url; topic: the
 * `batch-events` topic as manifests written before the topic became `OutboxEvent.topic` recorded it.
 */
export type DeliveryKind = 'webhook' | 'callback' | 'topic';

/**
 * pending until it lands (delivered), its endpoint said 410 or its origin left the allowlist (gone),
 * or the schedule ran out (poisoned).
 */
export type DeliveryState = 'pending' | 'delivered' | 'gone' | 'poisoned';

export interface Delivery {
  kind: DeliveryKind;
  /** The endpoint URL (or the topic's name). */
  target: string;
  state: DeliveryState;
  /** Attempts made so far. */
  attempts: number;
  /** When the next attempt is due (pending), or when it finished. */
  dueAt: string;
  lastStatus?: number;
  lastError?: string;
  /**
   * The key of the retry message recovery scheduled last for this attempt count: a retry message
   * without it (the original, or an older recovery's) is stale. An attempt's record clears it.
   */
  retryKey?: string;
}

export interface OutboxEvent {
  /** The CloudEvent id, sent as `webhook-id`: the same on every attempt, so receivers dedupe on it. */
  id: string;
  type: string;
  /** The structured-mode CloudEvent, exactly the bytes every attempt sends and signs. */
  body: string;
  deliveries: Delivery[];
  /**
   * The Service Bus topic that gets this event too (`batch-events`). Not a delivery: it is published
   * right after the terminal write and before the batch leaves the open-batch index, so the marker
   * alone says whether it may still be owed, and it costs no manifest write of its own.
   */
  topic?: string;
  /** Set by a manifest write made anyway (a webhook attempt's record) once the topic has the event. */
  topicSent?: true;
}

/** What one attempt got: a status (any HTTP answer) and/or an error (timeout, refused, network). */
export interface AttemptResult {
  status?: number;
  error?: string;
  /** A topic send the broker accepted (no HTTP status). */
  sent?: true;
  /** The target may no longer be sent to (a callback whose origin left the allowlist): finishes as gone, like 410. */
  gone?: true;
}

/** Takes a manifest (typed structurally: the manifest module imports this one). */
export function hasPendingDeliveries(m: { events?: readonly OutboxEvent[] }): boolean {
  return (m.events ?? []).some((e) => e.deliveries.some((d) => d.state === 'pending'));
}

/** Events whose topic copy may not have been published (the open marker decides whether it is owed). */
export function topicUnsent(m: { events?: readonly OutboxEvent[] }): OutboxEvent[] {
  return (m.events ?? []).filter((e) => e.topic !== undefined && e.topicSent !== true);
}

/** New pending deliveries, each due at `at`. */
export function pendingDeliveries(targets: readonly { kind: DeliveryKind; target: string }[], at: string): Delivery[] {
  return targets.map((t) => ({ ...t, state: 'pending', attempts: 0, dueAt: at }));
}

/** Where a failed attempt leads: another try after `delayMs`, or the poison queue. */
export type NextStep = { kind: 'finished' } | { kind: 'retry'; delayMs: number } | { kind: 'poisoned' };

/**
 * The delivery after one attempt: 2xx delivered, 410 gone (that endpoint asked us to stop), anything
 * else retried after the schedule's next wait, or poisoned once the schedule is spent. Mutates `d`.
 */
export function applyAttempt(
  d: Delivery,
  result: AttemptResult,
  scheduleSeconds: readonly number[],
  now: number,
): NextStep {
  d.attempts++;
  delete d.retryKey;
  if (result.status !== undefined) d.lastStatus = result.status;
  else delete d.lastStatus;
  if (result.error !== undefined) d.lastError = result.error;
  else delete d.lastError;
  const at = new Date(now).toISOString();
  const ok = result.sent === true || (result.status !== undefined && result.status >= 200 && result.status < 300);
  if (ok && result.error === undefined) {
    d.state = 'delivered';
    d.dueAt = at;
    return { kind: 'finished' };
  }
  if (result.status === 410 || result.gone === true) {
    d.state = 'gone';
    d.dueAt = at;
    return { kind: 'finished' };
  }
  const wait = scheduleSeconds[d.attempts - 1];
  if (wait === undefined) {
    d.state = 'poisoned';
    d.dueAt = at;
    return { kind: 'poisoned' };
  }
  d.dueAt = new Date(now + wait * 1000).toISOString();
  return { kind: 'retry', delayMs: wait * 1000 };
}

/** Why an attempt failed, in a few words (the status page and the poison record show it). */
export function describeAttempt(result: AttemptResult): string {
  if (result.error !== undefined) return result.error;
  return `HTTP ${result.status ?? '?'}`;
}
