/**
 * The scaling agent's own scheduled check, on the `work-detected` topic with a role only the
 * `scale` subscription's filter takes, and what that subscription delivers: any WorkDetected (a
 * load signal), or the agent's check.
 */
import { SCALE_CHECK_ROLE } from '../names';
import { MESSAGE_TYPES } from './message-types';
import type { OutgoingMessage } from './outgoing-message';
import { triggerValue } from './trigger-value';
import { parseWorkDetected } from './work-detected';

const TYPE = MESSAGE_TYPES.ScaleCheck;

/** The body of the scaling agent's scheduled check. */
const SCALE_CHECK = { v: 1, kind: TYPE.subject } as const;

export function scaleCheckOutgoing(): OutgoingMessage {
  return {
    body: SCALE_CHECK,
    contentType: 'application/json',
    subject: TYPE.subject,
    timeToLive: TYPE.ttlMs,
    applicationProperties: { role: SCALE_CHECK_ROLE },
  };
}

/** What the `scale` subscription delivers; a string says what is wrong. */
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
