/**
 * What the broker keeps per message and per lock, and the settlements a receiver can ask for.
 */
import type { Message } from 'rhea';

import type { LockToken } from './lock-token';
import type { TimerHandle } from './timers';

export interface StoredMessage {
  payload: Message;
  /** `payload` AMQP-encoded, made once for the journal; cleared when a settlement changes the payload. */
  encoded?: Buffer;
  readonly sequenceNumber: number;
  readonly enqueuedAt: number;
  /** Epoch ms; Infinity when the message never expires. */
  readonly expiresAt: number;
  readonly ttlMs: number;
  /** Header `delivery_count`: deliveries that ended without settlement. */
  deliveryCount: number;
  readonly deadLetterSource?: string;
}

export interface Lock {
  readonly token: LockToken;
  readonly message: StoredMessage;
  /** Where the message returns when the lock ends unsettled. */
  readonly origin: 'active' | 'deferred';
  lockedUntil: number;
  timer: TimerHandle | undefined;
}

export type Settlement =
  | { kind: 'complete' }
  | { kind: 'abandon' | 'defer'; properties?: Record<string, unknown> }
  | { kind: 'deadletter'; reason?: string; description?: string; properties?: Record<string, unknown> };

export interface PeekedMessage {
  message: StoredMessage;
  state: 'active' | 'deferred';
}
