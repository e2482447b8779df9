/**
 * The QueueStore port over Azure Storage queues. Messages are plain JSON text: no Functions
 * queue trigger reads these queues, so no base64 envelope is needed.
 */
import type { QueueClient, QueueServiceClient } from '@azure/storage-queue';

import {
  type DrainQueue,
  MAX_RECEIVE,
  type PeekedMessage,
  type PoisonRecord,
  type QueueMessage,
  type QueueStore,
} from '../ports';
import { statusOf } from '../storage/azure-blob-store';
import { withHandback } from './handbacks';
import { MessageTakenError } from './message-taken-error';

/** TTL -1: a backlog never silently expires (the default is 7 days). */
const FOREVER = { messageTimeToLive: -1 };

class StorageDrainQueue implements DrainQueue {
  constructor(
    private readonly client: QueueClient,
    private readonly poisonClient: QueueClient,
    private readonly now: () => number = Date.now,
  ) {}

  get name(): string {
    return this.client.name;
  }

  async receive(max: number, visibilityTimeoutSeconds: number): Promise<QueueMessage[]> {
    const res = await this.client.receiveMessages({
      numberOfMessages: Math.min(max, MAX_RECEIVE),
      visibilityTimeout: visibilityTimeoutSeconds,
    });
    return res.receivedMessageItems.map((m) => ({
      id: m.messageId,
      popReceipt: m.popReceipt,
      dequeueCount: m.dequeueCount,
      text: m.messageText,
    }));
  }

  async delete(message: QueueMessage): Promise<void> {
    try {
      await this.client.deleteMessage(message.id, message.popReceipt);
    } catch (e) {
      throw takenOr(e, message);
    }
  }

  async extend(message: QueueMessage, visibilityTimeoutSeconds: number): Promise<void> {
    try {
      const res = await this.client.updateMessage(message.id, message.popReceipt, undefined, visibilityTimeoutSeconds);
      // The old receipt is void from here on: the delete must use this one.
      if (res.popReceipt) message.popReceipt = res.popReceipt;
    } catch (e) {
      throw takenOr(e, message);
    }
  }

  async handBack(message: QueueMessage, delaySeconds: number): Promise<void> {
    try {
      const res = await this.client.updateMessage(
        message.id,
        message.popReceipt,
        withHandback(message.text),
        delaySeconds,
      );
      if (res.popReceipt) message.popReceipt = res.popReceipt;
    } catch (e) {
      throw takenOr(e, message);
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
    await this.poisonClient.sendMessage(JSON.stringify(record), FOREVER);
    try {
      await this.delete(message);
    } catch (e) {
      // Another delivery has it: it will be poisoned (or processed) there; the record here is a duplicate.
      if (!(e instanceof MessageTakenError)) throw e;
    }
  }
}

/**
 * 404 (gone: another delivery deleted it) and 400 PopReceiptMismatch (another delivery received
 * it since) both mean the message is no longer ours.
 */
function takenOr(e: unknown, message: QueueMessage): unknown {
  const status = statusOf(e);
  const code = (e as { code?: unknown } | null)?.code;
  if (status === 404 || (status === 400 && code === 'PopReceiptMismatch'))
    return new MessageTakenError(message.id, { cause: e });
  return e;
}

export class AzureQueueStore implements QueueStore {
  constructor(
    private readonly service: QueueServiceClient,
    private readonly poisonOf: (queue: string) => string,
    private readonly now: () => number = Date.now,
  ) {}

  queue(name: string): DrainQueue {
    return new StorageDrainQueue(
      this.service.getQueueClient(name),
      this.service.getQueueClient(this.poisonOf(name)),
      this.now,
    );
  }

  async send(queue: string, body: unknown): Promise<void> {
    await this.service.getQueueClient(queue).sendMessage(JSON.stringify(body), FOREVER);
  }

  async depth(queue: string): Promise<number> {
    return (await this.service.getQueueClient(queue).getProperties()).approximateMessagesCount ?? 0;
  }

  async peek(queue: string, max: number): Promise<PeekedMessage[]> {
    const res = await this.service
      .getQueueClient(queue)
      .peekMessages({ numberOfMessages: Math.max(1, Math.min(max, MAX_RECEIVE)) });
    return res.peekedMessageItems.map((m) => ({
      id: m.messageId,
      insertedOn: m.insertedOn.getTime(),
      dequeueCount: m.dequeueCount,
      text: m.messageText,
    }));
  }
}
