/**
 * The WorkDetected event: the only thing Service Bus carries. It says "queue Q of account A
 * has work"; the work itself stays in Storage (claim check), so events stay tiny.
 */
import { PermanentError } from '../errors';
import { type EntityNames, type Role, ROLE_OF } from '../names';
import type { DeliveryRetryMessage } from './delivery-retry-message';
import type { PublisherHealth } from './failover-state';

export interface WorkDetected {
  storageAccount: string;
  queueName: string;
  /** Compressed bytes of work behind the pointers just enqueued (a load signal for scaling). */
  payloadSize: number;
  role: Role;
  batchId?: string;
  /**
   * A fan-out event: extra capacity for a deep queue, published by the drain that holds the
   * queue's slot 0. It never starts a hand-over of its own (see shared/drain/coordinator.ts).
   */
  fanOut?: true;
  /**
   * W3C trace context of the batch step that published it. On the wire it is the message's
   * `Diagnostic-Id` application property (what the Service Bus SDK and the Functions host read),
   * never the body.
   */
  traceparent?: string;
}

/**
 * Messages scheduled on an entity that can still be taken back before they are due (Service
 * Bus cancels by sequence number; the numbers stay with the channel that scheduled them).
 */
export interface ScheduledMessages {
  readonly count: number;
  /**
   * The sequence numbers as decimal text: what another process needs to cancel them (a batch's
   * manifest keeps its pending watchdog check's), where the channel hands them back.
   */
  readonly sequenceNumbers?: readonly string[];
  /** Rejects when a message is no longer scheduled (it came due, or was cancelled already). */
  cancel(): Promise<void>;
}

export interface PublishOptions {
  /** Deliver no earlier than this many ms from now (a scheduled message); 0 = now. */
  delayMs?: number;
}

/** A scheduled per-batch check (queue `batch-watchdog`): "is this batch done yet?" */
export interface WatchdogCheck {
  v: 1;
  batchId: string;
  /** 1 for the first check after acceptance. */
  attempt: number;
  /** Chunks done + failed at the previous check, to tell progress from a stall. */
  settledBefore: number;
}

/** Delay before check `attempt` (1-based): SLA, 2×SLA, 4×SLA… capped at a day. */
function watchdogDelayMs(slaSeconds: number, attempt: number): number {
  return Math.min(slaSeconds * 1000 * 2 ** (attempt - 1), 24 * 3600 * 1000);
}

/** Implemented over Service Bus in production and by a capturing fake in unit tests. */
export interface WorkPublisher {
  /** A schedule (delayMs > 0) returns what can cancel it, when the publisher can (see ScheduledMessages). */
  publish(events: readonly WorkDetected[], options?: PublishOptions): Promise<ScheduledMessages | void>;
  /**
   * Schedules a watchdog check, or a delivery's retry, on the watchdog queue `delayMs` from now; free
   * until it fires. Returns what can cancel it, where it can be.
   */
  scheduleWatchdog(message: WatchdogCheck | DeliveryRetryMessage, delayMs: number): Promise<ScheduledMessages | void>;
  /**
   * Cancels scheduled watchdog checks by sequence number (a batch that finished needs none).
   * Rejects when one is no longer scheduled (it came due, or was cancelled already).
   */
  cancelWatchdog?(sequenceNumbers: readonly string[]): Promise<void>;
  /** Sends a batch's CloudEvent to the `batch-events` topic (structured body, `cloudEvents:` properties). */
  publishBatchEvent?(event: { id: string; type: string; body: string }): Promise<void>;
  /** Schedules the scaling agent's own check `delayMs` from now (only the `scale` subscription gets it). */
  scheduleScaleCheck?(delayMs: number): Promise<void>;
  /** Failover state per entity; only a publisher with a secondary namespace has one. */
  health?(): PublisherHealth;
  close(): Promise<void>;
}

/** The body of the scaling agent's scheduled check. */
export const SCALE_CHECK = { v: 1, kind: 'ScaleCheck' } as const;

/** What the `scale` subscription delivers: any WorkDetected (a load signal), or the agent's own check. */
export function parseScaleSignal(
  body: unknown,
): { kind: 'work'; queue: string; payloadSize: number; batchId?: string } | { kind: 'check' } | string {
  const value = triggerValue(body);
  if (typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === SCALE_CHECK.kind)
    return { kind: 'check' };
  const event = parseWorkDetected(value);
  if (typeof event === 'string') return event;
  // The batch whose work it signals: the agent's depth reads are part of what that batch cost.
  return {
    kind: 'work',
    queue: event.queueName,
    payloadSize: event.payloadSize,
    ...(event.batchId ? { batchId: event.batchId } : {}),
  };
}

/** Parses a watchdog check from a trigger body; a string describes what is wrong. */
export function parseWatchdogCheck(body: unknown): WatchdogCheck | string {
  const value = triggerValue(body);
  if (typeof value !== 'object' || value === null) return 'watchdog body is not a JSON object';
  const v = value as Record<string, unknown>;
  if (v.v !== 1 || typeof v.batchId !== 'string') return 'watchdog body is not a v1 check with a batchId';
  if (typeof v.attempt !== 'number' || !Number.isInteger(v.attempt) || v.attempt < 1)
    return 'watchdog attempt must be a positive integer';
  const settledBefore =
    typeof v.settledBefore === 'number' && Number.isInteger(v.settledBefore) && v.settledBefore >= 0
      ? v.settledBefore
      : 0;
  return { v: 1, batchId: v.batchId, attempt: v.attempt, settledBefore };
}

const QUEUE_NAME = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/;

/** Parses an event from a trigger body; a malformed one is a PermanentError upstream (dead-letter, don't retry). */
export function parseWorkDetected(body: unknown): WorkDetected | string {
  const value = triggerValue(body);
  if (typeof value !== 'object' || value === null) return 'event body is not a JSON object';
  const v = value as Record<string, unknown>;
  if (typeof v.queueName !== 'string' || !QUEUE_NAME.test(v.queueName))
    return 'queueName is missing or not a valid queue name';
  if (v.role !== 'input' && v.role !== 'output') return 'role must be "input" or "output"';
  if (typeof v.storageAccount !== 'string' || v.storageAccount.length === 0) return 'storageAccount is missing';
  const payloadSize =
    typeof v.payloadSize === 'number' && Number.isFinite(v.payloadSize) && v.payloadSize >= 0 ? v.payloadSize : 0;
  return {
    storageAccount: v.storageAccount,
    queueName: v.queueName,
    payloadSize,
    role: v.role,
    ...(typeof v.batchId === 'string' ? { batchId: v.batchId } : {}),
    ...(v.fanOut === true ? { fanOut: true as const } : {}),
  };
}

/** A trigger body as a value: JSON text or bytes are parsed (undefined when not JSON); anything else is taken as is. */
export function triggerValue(body: unknown): unknown {
  if (typeof body === 'string') return safeJson(body);
  if (body instanceof Uint8Array) return safeJson(Buffer.from(body).toString('utf8'));
  return body;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A queue that has work, for Notifier.wake; a manifest records one per queue of its batch. */
export interface Wake {
  queue: string;
  /** Compressed bytes of work just enqueued (a load signal); 0 when unknown. */
  payloadSize?: number;
  /** Chunks of the batch enqueued on it (the manifest's record; the event does not carry it). */
  chunks?: number;
}

/**
 * What the steps tell Service Bus, in the pipeline's words: "queue Q has work", "come back
 * to Q later", "check batch B after a while". It builds every WorkDetected event (storage
 * account, role from the queue's name), so no step assembles one by hand.
 */
export class Notifier {
  constructor(
    private readonly publisher: WorkPublisher,
    private readonly storageAccount: string,
    private readonly names: EntityNames,
    private readonly watchdogSlaSeconds: number,
  ) {}

  private event(w: Wake, batchId?: string, traceparent?: string): WorkDetected {
    const stage = this.names.stageOf(w.queue);
    if (!stage) throw new PermanentError(`queue ${w.queue} is not one this app drains`);
    return {
      storageAccount: this.storageAccount,
      queueName: w.queue,
      payloadSize: w.payloadSize ?? 0,
      role: ROLE_OF[stage],
      ...(batchId ? { batchId } : {}),
      ...(traceparent ? { traceparent } : {}),
    };
  }

  /** Work is on these queues. Callers enqueue first and wake second: no wake-up is lost. */
  async wake(queues: readonly Wake[], batchId?: string, traceparent?: string): Promise<void> {
    await this.publisher.publish(queues.map((q) => this.event(q, batchId, traceparent)));
  }

  /** Hands a queue over to a later wake-up, now or after a delay (a scheduled message, which may come back cancellable). */
  continuation(queue: string, delayMs: number): Promise<ScheduledMessages | void> {
    return this.publisher.publish([this.event({ queue })], { delayMs });
  }

  /** Asks for `count` more drains of a deep queue: fan-out events, held by the instances that take them. */
  async fanOut(queue: string, count: number): Promise<void> {
    if (count <= 0) return;
    const one: WorkDetected = { ...this.event({ queue }), fanOut: true };
    await this.publisher.publish(Array.from({ length: count }, () => ({ ...one })));
  }

  /**
   * A batch was just accepted: wake its queues and schedule its first watchdog check. Returns
   * the check's sequence numbers, for the manifest, when the publisher can cancel it later.
   */
  async accepted(batchId: string, queues: readonly Wake[], traceparent?: string): Promise<string[] | undefined> {
    await this.wake(queues, batchId, traceparent);
    return (await this.scheduleCheck({ v: 1, batchId, attempt: 1, settledBefore: 0 })).sequenceNumbers;
  }

  /** The scaling agent's next look, `delayMs` from now. */
  async scheduleScaleCheck(delayMs: number): Promise<void> {
    if (!this.publisher.scheduleScaleCheck) throw new PermanentError('this publisher cannot schedule scale checks');
    await this.publisher.scheduleScaleCheck(delayMs);
  }

  /**
   * Schedules a watchdog check at the delay its attempt number gives; free until it fires.
   * `sequenceNumbers`: what cancels it (cancelChecks), when the publisher hands them back.
   */
  async scheduleCheck(check: WatchdogCheck): Promise<{ delayMs: number; sequenceNumbers?: string[] }> {
    const delayMs = watchdogDelayMs(this.watchdogSlaSeconds, check.attempt);
    const scheduled = await this.publisher.scheduleWatchdog(check, delayMs);
    const seq = this.publisher.cancelWatchdog && scheduled ? scheduled.sequenceNumbers : undefined;
    return { delayMs, ...(seq && seq.length > 0 ? { sequenceNumbers: [...seq] } : {}) };
  }

  /**
   * Takes back scheduled watchdog checks of a batch that no longer needs them (it finished), so
   * none comes due to start an instance for nothing. Rejects when one is no longer scheduled.
   */
  async cancelChecks(sequenceNumbers: readonly string[]): Promise<void> {
    if (sequenceNumbers.length === 0 || !this.publisher.cancelWatchdog) return;
    await this.publisher.cancelWatchdog(sequenceNumbers);
  }

  health(): PublisherHealth | undefined {
    return this.publisher.health?.();
  }

  close(): Promise<void> {
    return this.publisher.close();
  }
}
