/**
 * Publishes WorkDetected to the `work-detected` topic. The application property `role`
 * drives the subscription filters. Retries are short: the SDK's default 30 s delay would
 * hold an HTTP ingest hostage.
 */
import type { ServiceBusMessage, ServiceBusSender } from '@azure/service-bus';
import { ServiceBusClient } from '@azure/service-bus';

import type { ServiceBusConnection } from '../config/connections';
import { ensureError, PermanentError, TransientError } from '../errors';
import { SCALE_CHECK_ROLE, TOPIC, WATCHDOG_QUEUE } from '../names';
import { retryDecision } from '../retry/transient';
import { credentialFor } from '../storage/clients';
import { type PublishOptions, SCALE_CHECK, type WatchdogCheck, type WorkDetected, type WorkPublisher } from './events';

export const PUBLISH_RETRY = { maxRetries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 2_000, timeoutInMs: 10_000 };

export function createServiceBusClient(connection: ServiceBusConnection): ServiceBusClient {
  const options = { retryOptions: PUBLISH_RETRY };
  return connection.kind === 'connectionString'
    ? new ServiceBusClient(connection.connectionString, options)
    : new ServiceBusClient(connection.fullyQualifiedNamespace, credentialFor(connection), options);
}

export function toMessage(event: WorkDetected): ServiceBusMessage {
  return {
    body: event,
    contentType: 'application/json',
    subject: 'WorkDetected',
    applicationProperties: { role: event.role, queueName: event.queueName },
  };
}

export class ServiceBusPublisher implements WorkPublisher {
  private readonly sender: ServiceBusSender;
  private watchdogSender: ServiceBusSender | undefined;

  constructor(
    private readonly client: ServiceBusClient,
    topic: string = TOPIC,
    private readonly now: () => number = Date.now,
  ) {
    this.sender = client.createSender(topic);
  }

  async scheduleWatchdog(check: WatchdogCheck, delayMs: number): Promise<void> {
    this.watchdogSender ??= this.client.createSender(WATCHDOG_QUEUE);
    const sender = this.watchdogSender;
    await this.wrap(`scheduling the watchdog check of ${check.batchId}`, () =>
      sender.scheduleMessages(
        // messageId per (batch, attempt): duplicate detection, where enabled, drops a double schedule.
        { body: check, contentType: 'application/json', subject: 'WatchdogCheck', messageId: `${check.batchId}:${check.attempt}` },
        new Date(this.now() + delayMs),
      ),
    );
  }

  async scheduleScaleCheck(delayMs: number): Promise<void> {
    const message: ServiceBusMessage = { body: SCALE_CHECK, contentType: 'application/json', subject: 'ScaleCheck', applicationProperties: { role: SCALE_CHECK_ROLE } };
    await this.wrap('scheduling a scale check', () => this.sender.scheduleMessages(message, new Date(this.now() + delayMs)));
  }

  async publish(events: readonly WorkDetected[], options: PublishOptions = {}): Promise<void> {
    if (events.length === 0) return;
    await this.wrap(`publishing ${events.length} WorkDetected event(s)`, () => this.send(events, options));
  }

  /** Maps SDK failures through the one retry table into TransientError / PermanentError. */
  private async wrap<T>(what: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (e) {
      if (e instanceof PermanentError) throw e;
      const decision = retryDecision(e);
      const message = `${what} failed: ${ensureError(e).message}`;
      throw decision.retry ? new TransientError(message, decision.waitMs, { cause: e }) : new PermanentError(message, { cause: e });
    }
  }

  private async send(events: readonly WorkDetected[], options: PublishOptions): Promise<void> {
    const messages = events.map(toMessage);
    if (options.delayMs && options.delayMs > 0) {
      await this.sender.scheduleMessages(messages, new Date(this.now() + options.delayMs));
      return;
    }
    if (messages.length === 1) {
      await this.sender.sendMessages(messages[0] as ServiceBusMessage);
      return;
    }
    let batch = await this.sender.createMessageBatch();
    for (const m of messages) {
      if (batch.tryAddMessage(m)) continue;
      await this.sender.sendMessages(batch);
      batch = await this.sender.createMessageBatch();
      if (!batch.tryAddMessage(m)) throw new PermanentError('a WorkDetected event does not fit in an empty message batch');
    }
    if (batch.count > 0) await this.sender.sendMessages(batch);
  }

  async close(): Promise<void> {
    await this.watchdogSender?.close();
    await this.sender.close();
    await this.client.close();
  }
}
