/**
 * The drainer's queue seam over Azure Storage queues. Messages are plain JSON text: no
 * Functions queue trigger reads these queues, so no base64 envelope is needed.
 */
import type { QueueClient, QueueServiceClient } from '@azure/storage-queue';

import type { DrainQueue, QueueMessage } from '../drain/types';
import { statusOf } from '../storage/blob-io';

/** Azure's cap on one receive. */
export const MAX_RECEIVE = 32;

export interface PoisonRecord {
  queue: string;
  messageId: string;
  dequeueCount: number;
  reason: string;
  at: string;
  text: string;
}

export class StorageDrainQueue implements DrainQueue {
  private readonly client: QueueClient;
  private readonly poisonClient: QueueClient;

  constructor(
    service: QueueServiceClient,
    readonly name: string,
    poisonName: string,
    private readonly now: () => number = Date.now,
  ) {
    this.client = service.getQueueClient(name);
    this.poisonClient = service.getQueueClient(poisonName);
  }

  async receive(max: number, visibilityTimeoutSeconds: number): Promise<QueueMessage[]> {
    const res = await this.client.receiveMessages({ numberOfMessages: Math.min(max, MAX_RECEIVE), visibilityTimeout: visibilityTimeoutSeconds });
    return res.receivedMessageItems.map((m) => ({ id: m.messageId, popReceipt: m.popReceipt, dequeueCount: m.dequeueCount, text: m.messageText }));
  }

  async delete(message: QueueMessage): Promise<void> {
    try {
      await this.client.deleteMessage(message.id, message.popReceipt);
    } catch (e) {
      // Already gone (deleted by an earlier delivery's worker): the outcome we wanted.
      if (statusOf(e) === 404) return;
      throw e;
    }
  }

  async depth(): Promise<number> {
    const props = await this.client.getProperties();
    return props.approximateMessagesCount ?? 0;
  }

  async hasVisible(): Promise<boolean> {
    const res = await this.client.peekMessages({ numberOfMessages: 1 });
    return res.peekedMessageItems.length > 0;
  }

  async poison(message: QueueMessage, reason: string): Promise<void> {
    const record: PoisonRecord = {
      queue: this.name,
      messageId: message.id,
      dequeueCount: message.dequeueCount,
      reason,
      at: new Date(this.now()).toISOString(),
      text: message.text,
    };
    // Send first, delete second: a crash in between leaves a duplicate, never a loss.
    await this.poisonClient.sendMessage(JSON.stringify(record), { messageTimeToLive: -1 });
    await this.delete(message);
  }
}

/** Sends a small pointer message; TTL -1 so a backlog never silently expires (the default is 7 days). */
export async function sendPointer(client: QueueClient, body: unknown): Promise<void> {
  await client.sendMessage(JSON.stringify(body), { messageTimeToLive: -1 });
}
