/**
 * The messages of one receivable entity (queue, subscription or dead-letter queue) and their
 * life cycle: available → locked → completed / abandoned / deferred / dead-lettered / expired.
 * Each change is journaled (see journal.ts) as it is made.
 */
import type { Message } from 'rhea';

import { encodeMessage, messageTtl, withApplicationProperties } from './amqp-message';
import type { StoreSettings } from './config';
import { ExpirySweep } from './expiry-sweep';
import type { Journal } from './journal';
import type { JournalOp, MessageRecord, MessageState } from './journal-codec';
import { newLockToken } from './lock-token';
import type { Stats } from './stats';
import type { Lock, PeekedMessage, Settlement, StoredMessage } from './stored-message';
import type { Timers } from './timers';

export interface StoreDeps {
  timers: Timers;
  stats: Stats;
  now: () => number;
  journal: Journal;
}

export const MAX_DELIVERY_REASON = 'MaxDeliveryCountExceeded';
const EXPIRED_REASON = 'TTLExpiredException';

type Origin = Lock['origin'];

export class MessageStore {
  /** Where dead-lettered messages go; undefined for a dead-letter queue itself. */
  deadLetterQueue: MessageStore | undefined;
  /** Called whenever a message becomes available (the dispatcher pumps on it). */
  onAvailable: () => void = () => undefined;

  private available: StoredMessage[] = [];
  private readonly locks = new Map<string, Lock>();
  private readonly deferred = new Map<number, StoredMessage>();
  private readonly sweep: ExpirySweep;
  private deadLetterSequence = 0;

  constructor(
    readonly path: string,
    readonly settings: StoreSettings,
    private readonly deps: StoreDeps,
  ) {
    this.sweep = new ExpirySweep(deps.timers, deps.now, (now) => this.expireDue(now));
  }

  /** `encoded` shares one encoding between the subscriptions a topic message fans out to. */
  enqueue(payload: Message, sequenceNumber: number, encoded?: () => Buffer): void {
    const now = this.deps.now();
    const ttlMs = Math.min(messageTtl(payload), this.settings.ttlMs);
    const msg: StoredMessage = {
      payload,
      sequenceNumber,
      enqueuedAt: now,
      expiresAt: now + ttlMs,
      ttlMs,
      deliveryCount: 0,
    };
    this.journal(() => {
      msg.encoded ??= encoded?.();
      return this.putOp(msg, 'active');
    });
    this.makeAvailable(msg);
  }

  /** Removes and returns the next unexpired message, expiring any stale ones on the way. */
  take(): StoredMessage | undefined {
    const now = this.deps.now();
    for (let msg = this.available.shift(); msg; msg = this.available.shift()) {
      if (msg.expiresAt > now) return msg;
      this.expire(msg);
    }
    return undefined;
  }

  lock(message: StoredMessage, origin: Origin): Lock {
    const token = newLockToken();
    const lock: Lock = { token, message, origin, lockedUntil: 0, timer: undefined };
    this.locks.set(token.id, lock);
    this.journal(() => ({ kind: 'lock', store: this.path, seq: message.sequenceNumber, origin }));
    this.startLockTimer(lock);
    return lock;
  }

  /** A message taken without a lock (receiveAndDelete) is gone. */
  discard(message: StoredMessage): void {
    this.journal(() => ({ kind: 'remove', store: this.path, seq: message.sequenceNumber }));
  }

  /** Applies a settlement; false when the lock is unknown or expired (lock lost). */
  settle(tokenId: string, s: Settlement): boolean {
    const lock = this.endLock(tokenId);
    if (!lock) return false;
    const msg = lock.message;
    this.deps.stats.inc(s.kind);
    const changed = s.kind !== 'complete' && s.properties !== undefined;
    if (changed) {
      msg.payload = withApplicationProperties(msg.payload, s.properties ?? {});
      msg.encoded = undefined;
    }
    if (s.kind === 'complete') this.discard(msg);
    else if (s.kind === 'deadletter') this.deadLetter(msg, s.reason, s.description);
    else if (s.kind === 'abandon') this.returnMessage(msg, lock.origin, true, changed);
    else this.putBack(msg, 'deferred', changed);
    return true;
  }

  /** Extends a lock by the entity's lock duration; returns the new expiry, or undefined if lost. */
  renew(tokenId: string): number | undefined {
    const lock = this.locks.get(tokenId);
    if (!lock) return undefined;
    this.deps.timers.cancel(lock.timer);
    this.startLockTimer(lock);
    return lock.lockedUntil;
  }

  /** The delivery never reached a receiver: the message returns with its delivery count unchanged. */
  release(tokenId: string): boolean {
    const lock = this.endLock(tokenId);
    if (lock) this.returnMessage(lock.message, lock.origin, false, false);
    return lock !== undefined;
  }

  /** Removes deferred messages by sequence number; undefined if any is not deferred here. */
  takeDeferred(sequenceNumbers: number[]): StoredMessage[] | undefined {
    if (!sequenceNumbers.every((n) => this.deferred.has(n))) return undefined;
    return sequenceNumbers.map((n) => {
      const msg = this.deferred.get(n)!;
      this.deferred.delete(n);
      return msg;
    });
  }

  /** Messages at or after `fromSequence`, in sequence order, without locking them. */
  peek(fromSequence: number, count: number): PeekedMessage[] {
    const all: PeekedMessage[] = [
      ...this.available.map((message) => ({ message, state: 'active' as const })),
      ...[...this.locks.values()].map((l) => ({ message: l.message, state: l.origin })),
      ...[...this.deferred.values()].map((message) => ({ message, state: 'deferred' as const })),
    ];
    return all
      .filter((p) => p.message.sequenceNumber >= fromSequence)
      .sort((a, b) => a.message.sequenceNumber - b.message.sequenceNumber)
      .slice(0, count);
  }

  counts(): { active: number; locked: number; deferred: number } {
    return { active: this.available.length, locked: this.locks.size, deferred: this.deferred.size };
  }

  /** Every message as a journal operation, for a compaction. */
  snapshot(): JournalOp[] {
    const ops: JournalOp[] = [];
    if (!this.deadLetterQueue) ops.push({ kind: 'sequence', owner: this.path, value: this.deadLetterSequence });
    for (const m of this.available) ops.push(this.putOp(m, 'active'));
    for (const m of this.deferred.values()) ops.push(this.putOp(m, 'deferred'));
    for (const l of this.locks.values()) ops.push(this.putOp(l.message, `locked-${l.origin}`));
    return ops;
  }

  /** Start-up: a message as the journal left it. A lock held at the crash ends as an expired lock does. */
  restore(msg: StoredMessage, state: MessageState): void {
    if (state === 'active') this.makeAvailable(msg);
    else if (state === 'deferred') this.deferred.set(msg.sequenceNumber, msg);
    else this.returnMessage(msg, state === 'locked-active' ? 'active' : 'deferred', true, false);
  }

  /** Start-up: a dead-letter queue's numbering continues after the highest number it handed out. */
  restoreSequence(value: number): void {
    this.deadLetterSequence = Math.max(this.deadLetterSequence, value);
  }

  private journal(make: () => JournalOp): void {
    this.deps.journal.append(make);
  }

  private putOp(msg: StoredMessage, state: MessageState): JournalOp {
    msg.encoded ??= encodeMessage(msg.payload);
    const { sequenceNumber, enqueuedAt, expiresAt, ttlMs, deliveryCount, deadLetterSource } = msg;
    const message: MessageRecord = {
      sequenceNumber,
      enqueuedAt,
      expiresAt,
      ttlMs,
      deliveryCount,
      deadLetterSource,
      payload: msg.encoded,
    };
    return { kind: 'put', store: this.path, state, message };
  }

  private startLockTimer(lock: Lock): void {
    const ms = this.settings.lockDurationMs;
    lock.lockedUntil = this.deps.now() + ms;
    lock.timer = this.deps.timers.after(ms, () => {
      if (this.locks.get(lock.token.id) !== lock) return;
      this.locks.delete(lock.token.id);
      this.deps.stats.inc('lockExpired');
      this.returnMessage(lock.message, lock.origin, true, false);
    });
  }

  private endLock(tokenId: string): Lock | undefined {
    const lock = this.locks.get(tokenId);
    if (!lock) return undefined;
    this.locks.delete(tokenId);
    this.deps.timers.cancel(lock.timer);
    return lock;
  }

  /** An unsettled lock ended: count the delivery, and dead-letter past maxDeliveryCount. */
  private returnMessage(msg: StoredMessage, origin: Origin, counted: boolean, changed: boolean): void {
    if (counted) msg.deliveryCount++;
    if (counted && msg.deliveryCount >= this.settings.maxDeliveryCount && this.deadLetterQueue) {
      const max = this.settings.maxDeliveryCount;
      this.deadLetter(msg, MAX_DELIVERY_REASON, `Message could not be consumed after ${max} delivery attempts.`);
    } else {
      this.putBack(msg, origin, changed);
    }
  }

  /** Back to the available list or the deferred set, journaled with its count (and payload, if changed). */
  private putBack(msg: StoredMessage, state: Origin, changed: boolean): void {
    this.journal(() => {
      const payload = changed ? (msg.encoded ??= encodeMessage(msg.payload)) : undefined;
      return {
        kind: 'update',
        store: this.path,
        seq: msg.sequenceNumber,
        deliveryCount: msg.deliveryCount,
        state,
        payload,
      };
    });
    if (state === 'deferred') this.deferred.set(msg.sequenceNumber, msg);
    else this.makeAvailable(msg);
  }

  private makeAvailable(msg: StoredMessage): void {
    // Keep sequence order: an abandoned message goes back to its place, not to the end.
    let i = this.available.length;
    while (i > 0 && this.available[i - 1]!.sequenceNumber > msg.sequenceNumber) i--;
    this.available.splice(i, 0, msg);
    this.sweep.schedule(msg.expiresAt);
    this.onAvailable();
  }

  private deadLetter(msg: StoredMessage, reason: string | undefined, description: string | undefined): void {
    const dlq = this.deadLetterQueue;
    if (!dlq) return this.putBack(msg, 'active', true);
    this.discard(msg);
    const payload = withApplicationProperties(msg.payload, {
      DeadLetterReason: reason,
      DeadLetterErrorDescription: description,
    });
    const moved: StoredMessage = {
      payload,
      sequenceNumber: ++dlq.deadLetterSequence,
      enqueuedAt: this.deps.now(),
      expiresAt: Infinity,
      ttlMs: msg.ttlMs,
      deliveryCount: msg.deliveryCount,
      deadLetterSource: this.path,
    };
    dlq.journal(() => dlq.putOp(moved, 'active'));
    dlq.makeAvailable(moved);
  }

  private expire(msg: StoredMessage): void {
    this.deps.stats.inc('expired');
    if (this.settings.deadLetterOnExpiration)
      this.deadLetter(msg, EXPIRED_REASON, 'The message expired and was dead lettered.');
    else this.discard(msg);
  }

  /** Expires due messages; returns the next expiry among those left. */
  private expireDue(now: number): number {
    const expired = this.available.filter((m) => m.expiresAt <= now);
    this.available = this.available.filter((m) => m.expiresAt > now);
    for (const msg of expired) this.expire(msg);
    return this.available.reduce((min, m) => Math.min(min, m.expiresAt), Infinity);
  }
}
