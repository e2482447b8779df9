/**
 * One receiver link (a broker-side rhea Sender): credit accounting, drain, delivery with a
 * lock (peekLock) or without (receiveAndDelete), and settlement from delivery outcomes.
 */
import type { EventContext, Sender } from 'rhea';

import { encodeForReceiver } from './amqp-message';
import type { ReceiveEntity } from './entities';
import { lockTokenFromTag, newLockToken } from './lock-token';
import { alwaysEchoDrain, creditLimit, forgetSettled, setLocalAttach } from './rhea-internals';
import { type OutcomeKind, replyOutcome, settlementFromOutcome } from './settlement';
import type { Stats } from './stats';
import type { Lock, StoredMessage } from './stored-message';

export type ReceiveMode = 'peekLock' | 'receiveAndDelete';

export interface ConsumerDeps {
  stats: Stats;
  /** Runs `fn` once the journal is durable and any injected latency has passed (at once when neither applies). */
  later: (fn: () => void) => void;
}

const OUTCOMES: readonly OutcomeKind[] = ['accepted', 'rejected', 'modified', 'released'];

export class Consumer {
  readonly mode: ReceiveMode;
  /** Delivery-count limit granted by the receiver's last flow. */
  private limit = 0;
  /** Deliveries started on this link (sent, or waiting for the journal or injected latency). */
  private issued = 0;
  /** Deliveries waiting for the journal or injected latency; a drain is answered only after them. */
  private pending = 0;
  private drainRequested = false;
  private closed = false;

  constructor(
    private readonly link: Sender,
    private readonly entity: ReceiveEntity,
    private readonly deps: ConsumerDeps,
  ) {
    // snd-settle-mode settled (1) is how the SDK asks for receiveAndDelete.
    this.mode = link.snd_settle_mode === 1 ? 'receiveAndDelete' : 'peekLock';
    setLocalAttach(link, { snd_settle_mode: link.snd_settle_mode, rcv_settle_mode: link.rcv_settle_mode });
    alwaysEchoDrain(link);
    link.on('sender_flow', () => this.onFlow());
    link.on('sender_draining', () => this.onDraining());
    for (const kind of OUTCOMES) link.on(kind, (ctx: EventContext) => this.onOutcome(kind, ctx));
    entity.dispatcher.add(this);
  }

  get credit(): number {
    return this.closed || !this.link.is_open() ? 0 : this.limit - this.issued;
  }

  deliver(message: StoredMessage): void {
    this.issued++;
    this.deps.stats.inc('deliver');
    const lock = this.mode === 'peekLock' ? this.entity.store.lock(message, 'active') : undefined;
    if (!lock) this.entity.store.discard(message);
    const bytes = encodeForReceiver(message.payload, {
      sequenceNumber: message.sequenceNumber,
      enqueuedAt: message.enqueuedAt,
      deliveryCount: message.deliveryCount,
      state: 'active',
      lockedUntil: lock?.lockedUntil,
      deadLetterSource: message.deadLetterSource,
      ttlMs: message.ttlMs,
    });
    const tag = (lock?.token ?? newLockToken()).tag;
    // Sent once the lock (or the removal) is durable, and after any injected latency.
    this.pending++;
    this.deps.later(() => {
      this.pending--;
      this.transmitLate(bytes, tag, lock);
      this.finishDrainIfRequested();
    });
  }

  /** The link is gone (closed by either side, or its connection dropped). Locks stay until they expire. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.entity.dispatcher.remove(this);
  }

  private transmitLate(bytes: Buffer, tag: Buffer, lock: Lock | undefined): void {
    if (!this.closed && this.link.is_open()) {
      this.link.send(bytes, tag, 0);
    } else if (lock) {
      // Never reached the receiver: not a delivery attempt.
      this.entity.store.release(lock.token.id);
    }
  }

  private onFlow(): void {
    this.deps.stats.inc('flow');
    this.limit = creditLimit(this.link);
    this.entity.dispatcher.pump();
  }

  /** Deliver what is available, then report the rest of the credit used (within the SDK's 200 ms). */
  private onDraining(): void {
    this.deps.stats.inc('drain');
    this.entity.dispatcher.pump();
    this.drainRequested = true;
    this.finishDrainIfRequested();
  }

  private finishDrainIfRequested(): void {
    if (!this.drainRequested || this.pending > 0 || this.closed) return;
    this.drainRequested = false;
    this.issued = this.limit;
    this.link.set_drained(true);
  }

  private onOutcome(kind: OutcomeKind, ctx: EventContext): void {
    const delivery = ctx.delivery;
    if (!delivery || this.mode === 'receiveAndDelete' || delivery.settled) return;
    const tokenId = lockTokenFromTag(delivery.tag);
    const settlement = settlementFromOutcome(kind, delivery.remote_state);
    const store = this.entity.store;
    let ok = false;
    if (tokenId !== undefined) ok = settlement ? store.settle(tokenId, settlement) : store.release(tokenId);
    this.deps.later(() => {
      delivery.update(true, replyOutcome(kind, ok));
      forgetSettled(delivery);
    });
  }
}
