/** A scheduled per-batch check on the `batch-watchdog` queue: "is this batch done yet?" */
import { MESSAGE_TYPES } from './message-types';
import type { OutgoingMessage } from './outgoing-message';
import { triggerValue } from './trigger-value';

export interface WatchdogCheck {
  v: 1;
  batchId: string;
  /** 1 for the first check after acceptance. */
  attempt: number;
  /** Chunks done + failed at the previous check, to tell progress from a stall. */
  settledBefore: number;
}

const TYPE = MESSAGE_TYPES.WatchdogCheck;

export function watchdogCheckOutgoing(check: WatchdogCheck): OutgoingMessage {
  return {
    body: check,
    contentType: 'application/json',
    subject: TYPE.subject,
    // One id per (batch, attempt): duplicate detection, where enabled, drops a double schedule.
    messageId: `${check.batchId}:${check.attempt}`,
    timeToLive: TYPE.ttlMs,
    applicationProperties: {},
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
