/**
 * What the `batch-watchdog` queue carries: a watchdog check, or a delivery's retry. A retry
 * scheduled before retries had a message of their own is a watchdog check with a `delivery`
 * field (and a meaningless attempt); it is read as the retry it is, so one in flight across an
 * upgrade is still attempted.
 */
import { type DeliveryRetryMessage, deliveryRetryMessage, parseDeliveryRetry } from './delivery-retry';
import { deliveryRetryOutgoing } from './delivery-retry';
import { MESSAGE_TYPES } from './message-types';
import { type OutgoingMessage } from './outgoing-message';
import { triggerValue } from './trigger-value';
import { parseWatchdogCheck, type WatchdogCheck, watchdogCheckOutgoing } from './watchdog-check';

export type WatchdogQueueMessage =
  { kind: 'check'; check: WatchdogCheck } | { kind: 'delivery-retry'; retry: DeliveryRetryMessage };

/** Parses a `batch-watchdog` message from a trigger body; a string describes what is wrong. */
export function parseWatchdogQueueMessage(body: unknown): WatchdogQueueMessage | string {
  const value = triggerValue(body);
  if (typeof value !== 'object' || value === null) return 'watchdog queue body is not a JSON object';
  const v = value as Record<string, unknown>;
  const retryOf = (fields: unknown): WatchdogQueueMessage | string => {
    if (v.v !== 1 || typeof v.batchId !== 'string') return 'delivery retry is not a v1 message with a batchId';
    const r = parseDeliveryRetry(fields);
    return typeof r === 'string' ? r : { kind: 'delivery-retry', retry: deliveryRetryMessage(v.batchId, r) };
  };
  if (v.kind === MESSAGE_TYPES.DeliveryRetry.subject) return retryOf(v);
  if (v.delivery !== undefined) return retryOf(v.delivery); // the older shape, on a watchdog check
  const check = parseWatchdogCheck(value);
  return typeof check === 'string' ? check : { kind: 'check', check };
}

/** The outgoing message of what the queue carries (a backlog copy restored). */
export function watchdogQueueOutgoing(read: WatchdogQueueMessage): OutgoingMessage {
  return read.kind === 'check' ? watchdogCheckOutgoing(read.check) : deliveryRetryOutgoing(read.retry);
}
