/**
 * WorkDetected: "queue Q of account A has work". The work itself stays in Storage (claim check),
 * so the event stays tiny. `role` and `queueName` are also application properties: the
 * subscriptions' correlation filters match on them.
 */
import type { Role } from '../names';
import { MESSAGE_TYPES } from './message-types';
import { DIAGNOSTIC_ID, type OutgoingMessage } from './outgoing-message';
import { triggerValue } from './trigger-value';

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

const TYPE = MESSAGE_TYPES.WorkDetected;

export function workDetectedOutgoing(event: WorkDetected): OutgoingMessage {
  const { traceparent, ...body } = event;
  return {
    body,
    contentType: 'application/json',
    subject: TYPE.subject,
    timeToLive: TYPE.ttlMs,
    applicationProperties: {
      role: event.role,
      queueName: event.queueName,
      ...(traceparent ? { [DIAGNOSTIC_ID]: traceparent } : {}),
    },
  };
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
