/**
 * A MessageChannel over one ServiceBusClient: a sender per entity, created on first use and
 * kept (a link costs a CBS exchange and an attach), batches filled to the link's size limit.
 */
import type { ServiceBusMessage, ServiceBusSender } from '@azure/service-bus';
import Long from 'long';

import type { ScheduledMessages } from '../bus/bus-publisher';
import type { MessageChannel } from '../bus/message-channel';
import type { OutgoingMessage } from '../bus/outgoing-message';
import { PermanentError } from '../errors';
import type { BusClient } from './lazy-service-bus-client';

export class ServiceBusChannel implements MessageChannel {
  private readonly senders = new Map<string, ServiceBusSender>();
  private closing: Promise<void> | undefined;

  constructor(private readonly client: BusClient) {}

  async send(
    entity: string,
    messages: readonly OutgoingMessage[],
    scheduledAt?: Date,
  ): Promise<ScheduledMessages | void> {
    if (messages.length === 0) return;
    const sender = this.sender(entity);
    const all: ServiceBusMessage[] = [...messages];
    if (scheduledAt) {
      const sequenceNumbers = await sender.scheduleMessages(all, scheduledAt);
      return {
        count: sequenceNumbers.length,
        sequenceNumbers: sequenceNumbers.map((n) => n.toString()),
        cancel: () => this.sender(entity).cancelScheduledMessages(sequenceNumbers),
      };
    }
    if (all.length === 1) {
      await sender.sendMessages(all[0] as ServiceBusMessage);
      return;
    }
    await sendBatched(
      sender,
      all,
      () => new PermanentError(`a message for ${entity} does not fit in an empty message batch`),
    );
  }

  async cancel(entity: string, sequenceNumbers: readonly string[]): Promise<void> {
    if (sequenceNumbers.length === 0) return;
    await this.sender(entity).cancelScheduledMessages(sequenceNumbers.map((n) => Long.fromString(n)));
  }

  /**
   * A fresh sender so that the attach really happens (a kept link may look open on a dead
   * connection); creating a batch opens the link and learns its size limit, and sends nothing.
   */
  async ping(entity: string): Promise<void> {
    const probe = this.client.createSender(entity);
    try {
      await probe.createMessageBatch();
    } finally {
      await probe.close().catch(() => undefined);
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.senders.values()].map((s) => s.close().catch(() => undefined)));
      await this.client.close();
    })();
    return this.closing;
  }

  private sender(entity: string): ServiceBusSender {
    let s = this.senders.get(entity);
    if (!s) {
      s = this.client.createSender(entity);
      this.senders.set(entity, s);
    }
    return s;
  }
}

/** Sends `messages` in as few batches as the link's size limit allows; `tooLarge` is thrown for a message no batch can hold. */
export async function sendBatched(
  sender: ServiceBusSender,
  messages: readonly ServiceBusMessage[],
  tooLarge: () => Error,
): Promise<void> {
  let batch = await sender.createMessageBatch();
  for (const m of messages) {
    if (batch.tryAddMessage(m)) continue;
    if (batch.count === 0) throw tooLarge();
    await sender.sendMessages(batch);
    batch = await sender.createMessageBatch();
    if (!batch.tryAddMessage(m)) throw tooLarge();
  }
  if (batch.count > 0) await sender.sendMessages(batch);
}
