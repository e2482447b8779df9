/**
 * Dead letters over AMQP: counted by peeking (Listen), resubmitted by receiving them in
 * peekLock from `$DeadLetterQueue`, sending a copy to their entity (Send), then completing
 * them. Send first: a crash in between leaves the dead letter and its copy (a duplicate
 * wake-up hint or check, which the app absorbs), never neither.
 */
import type { ServiceBusMessage, ServiceBusReceivedMessage, ServiceBusReceiver } from '@azure/service-bus';

import { failureSummary } from '../retry/transient';
import {
  APP_DEAD_LETTER_SOURCES,
  DEAD_LETTER_PROPERTIES,
  type DeadLetterCount,
  type DeadLetterQueues,
  type DeadLetterSource,
  type KeptDeadLetter,
  type ResubmitOutcome,
} from './dead-letters';
import type { BusClient } from './lazy-service-bus-client';
import { sendBatched } from './service-bus-channel';
import { peekFromStart } from './service-bus-inspector';

export interface DeadLetterOptions {
  /** Dead letters counted per entity at most. @defaultValue 100 */
  countLimit?: number;
  /** Per entity count; a health refresh must not hang on a slow namespace. @defaultValue 5000 */
  countTimeoutMs?: number;
  /** How long one receive waits for the next dead letter. @defaultValue 1000 */
  receiveWaitMs?: number;
}

/** Messages received, sent and completed per round. */
const ROUND = 50;
/** Unreadable dead letters reported (and held locked) per entity and run, at most. */
const MAX_KEPT = 100;

/** The SDK throws an AggregateError of its attempts, whose own message is empty. */
const errorText = (e: unknown): string => failureSummary(e).slice(0, 300);

/** The copy that goes back: body and routing properties as they were, minus what dead-lettering added. */
function resubmission(m: ServiceBusReceivedMessage): ServiceBusMessage {
  const applicationProperties = Object.fromEntries(
    Object.entries(m.applicationProperties ?? {}).filter(([k]) => !DEAD_LETTER_PROPERTIES.includes(k)),
  );
  return {
    body: m.body as unknown,
    applicationProperties,
    ...(m.contentType !== undefined ? { contentType: m.contentType } : {}),
    ...(m.subject !== undefined ? { subject: m.subject } : {}),
    ...(m.messageId !== undefined ? { messageId: m.messageId } : {}),
    ...(m.correlationId !== undefined ? { correlationId: m.correlationId } : {}),
    // A fresh time to live from now: a dead letter that expired is worth its full TTL again.
    ...(m.timeToLive !== undefined ? { timeToLive: m.timeToLive } : {}),
  };
}

export class ServiceBusDeadLetters implements DeadLetterQueues {
  private readonly countLimit: number;
  private readonly countTimeoutMs: number;
  private readonly receiveWaitMs: number;

  constructor(
    private readonly client: BusClient,
    /** Close the client with this adapter (when no publisher shares and closes it). */
    private readonly ownsClient: boolean,
    readonly sources: readonly DeadLetterSource[] = APP_DEAD_LETTER_SOURCES,
    options: DeadLetterOptions = {},
  ) {
    this.countLimit = options.countLimit ?? 100;
    this.countTimeoutMs = options.countTimeoutMs ?? 5_000;
    this.receiveWaitMs = options.receiveWaitMs ?? 1_000;
  }

  async count(): Promise<DeadLetterCount[]> {
    return Promise.all(
      this.sources.map(async (s) => {
        try {
          const n = await this.peekCount(s, this.countLimit);
          return { entity: s.entity, deadLetters: n, truncated: n >= this.countLimit };
        } catch (e) {
          return { entity: s.entity, deadLetters: 0, truncated: false, error: errorText(e) };
        }
      }),
    );
  }

  async resubmit(source: DeadLetterSource, max: number): Promise<ResubmitOutcome> {
    const out: ResubmitOutcome = { entity: source.entity, moved: 0, kept: [] };
    try {
      // An empty dead-letter queue costs one peek and no receive link (nor a receive's wait).
      if ((await this.peekCount(source, 1)) === 0) return out;
    } catch (e) {
      return { ...out, error: errorText(e) };
    }
    const receiver = this.receiver(source, 'peekLock');
    const sender = this.client.createSender(source.target);
    // Unreadable ones stay locked until the end, so this run does not receive them again.
    const held: ServiceBusReceivedMessage[] = [];
    const kept = new Map<string, KeptDeadLetter>();
    try {
      const rounds = Math.ceil(max / ROUND) + Math.ceil(MAX_KEPT / ROUND) + 1;
      for (let round = 0; round < rounds && out.moved < max && kept.size < MAX_KEPT; round++) {
        const got = await receiver.receiveMessages(Math.min(ROUND, max - out.moved), {
          maxWaitTimeInMs: this.receiveWaitMs,
        });
        if (got.length === 0) break;
        const readable: ServiceBusReceivedMessage[] = [];
        for (const m of got) {
          const problem = source.unreadable(m.body);
          if (problem === undefined) readable.push(m);
          else {
            held.push(m);
            const seq = m.sequenceNumber?.toString() ?? '?';
            kept.set(seq, {
              entity: source.entity,
              sequenceNumber: seq,
              ...(m.messageId !== undefined ? { messageId: String(m.messageId) } : {}),
              deadLetterReason: m.deadLetterReason ?? '(no reason given)',
              problem,
            });
          }
        }
        if (readable.length === 0) continue;
        try {
          await sendBatched(
            sender,
            readable.map(resubmission),
            () => new Error(`a dead letter of ${sender.entityPath} is too large to resend`),
          );
        } catch (e) {
          held.push(...readable); // not sent: released below, still dead-lettered
          throw e;
        }
        for (const m of readable) {
          await receiver.completeMessage(m);
          out.moved++;
        }
      }
    } catch (e) {
      out.error = errorText(e);
    } finally {
      await Promise.allSettled(held.map((m) => receiver.abandonMessage(m)));
      await Promise.allSettled([receiver.close(), sender.close()]);
    }
    out.kept = [...kept.values()];
    return out;
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }

  private receiver(s: DeadLetterSource, receiveMode: 'peekLock'): ServiceBusReceiver {
    // No lock renewal: a round takes far less than the lock, and renewal timers would outlive an abort.
    const options = { subQueueType: 'deadLetter' as const, receiveMode, maxAutoLockRenewalDurationInMs: 0 };
    return s.queue
      ? this.client.createReceiver(s.queue, options)
      : this.client.createReceiver(s.topic ?? '', s.subscription ?? '', options);
  }

  /** Counts by peeking (no lock, nothing changed), up to `limit`. */
  private async peekCount(s: DeadLetterSource, limit: number): Promise<number> {
    const receiver = this.receiver(s, 'peekLock');
    try {
      return (await peekFromStart(receiver, limit, this.countTimeoutMs)).length;
    } finally {
      await receiver.close();
    }
  }
}
