/**
 * Publishes WorkDetected to the `work-detected` topic and schedules watchdog checks on the
 * `batch-watchdog` queue, in one namespace. The application property `role` drives the
 * subscription filters. Retries are short: the SDK's default 30 s delay would hold an HTTP
 * ingest hostage.
 */
import type * as ServiceBus from '@azure/service-bus';

import type { ServiceBusConnection } from '../config/connections';
import { PermanentError, TransientError } from '../errors';
import { BATCH_EVENTS_TOPIC, TOPIC, WATCHDOG_QUEUE } from '../names';
import { failureSummary, retryDecision } from '../retry/transient';
import { credentialFor } from '../storage/clients';
import type { DeliveryRetryMessage } from './delivery-retry-message';
import type { PublishOptions, ScheduledMessages, WatchdogCheck, WorkDetected, WorkPublisher } from './events';
import { type BusClient, lazyServiceBusClient } from './lazy-service-bus-client';
import { batchEventMessage, scaleCheckMessage, toMessage, watchdogMessage } from './messages';
import { ServiceBusChannel } from './service-bus-channel';

export const PUBLISH_RETRY = { maxRetries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 2_000, timeoutInMs: 10_000 };

/** The app's client of one namespace; its SDK (and an identity's) loads on the first sender or receiver. */
export function createServiceBusClient(connection: ServiceBusConnection): BusClient {
  return lazyServiceBusClient(() => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { ServiceBusClient } = require('@azure/service-bus') as typeof ServiceBus;
    const options = { retryOptions: PUBLISH_RETRY };
    return connection.kind === 'connectionString'
      ? new ServiceBusClient(connection.connectionString, options)
      : new ServiceBusClient(connection.fullyQualifiedNamespace, credentialFor(connection), options);
  });
}

export class ServiceBusPublisher implements WorkPublisher {
  private readonly channel: ServiceBusChannel;

  constructor(
    client: BusClient,
    private readonly topic: string = TOPIC,
    private readonly now: () => number = Date.now,
  ) {
    this.channel = new ServiceBusChannel(client);
  }

  async scheduleWatchdog(
    check: WatchdogCheck | DeliveryRetryMessage,
    delayMs: number,
  ): Promise<ScheduledMessages | void> {
    return this.wrap(`scheduling the watchdog check of ${check.batchId}`, () =>
      this.channel.send(WATCHDOG_QUEUE, [watchdogMessage(check)], new Date(this.now() + delayMs)),
    );
  }

  async cancelWatchdog(sequenceNumbers: readonly string[]): Promise<void> {
    await this.wrap('cancelling a scheduled watchdog check', () =>
      this.channel.cancel(WATCHDOG_QUEUE, sequenceNumbers),
    );
  }

  async publishBatchEvent(event: { id: string; type: string; body: string }): Promise<void> {
    await this.wrap(`publishing batch event ${event.id}`, () =>
      this.channel.send(BATCH_EVENTS_TOPIC, [batchEventMessage(event)]),
    );
  }

  async scheduleScaleCheck(delayMs: number): Promise<void> {
    await this.wrap('scheduling a scale check', () =>
      this.channel.send(this.topic, [scaleCheckMessage()], new Date(this.now() + delayMs)),
    );
  }

  async publish(events: readonly WorkDetected[], options: PublishOptions = {}): Promise<ScheduledMessages | void> {
    if (events.length === 0) return;
    const at = options.delayMs && options.delayMs > 0 ? new Date(this.now() + options.delayMs) : undefined;
    return this.wrap(`publishing ${events.length} WorkDetected event(s)`, () =>
      this.channel.send(this.topic, events.map(toMessage), at),
    );
  }

  /** Maps SDK failures through the one retry table into TransientError / PermanentError. */
  private async wrap<T>(what: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (e) {
      if (e instanceof PermanentError) throw e;
      const decision = retryDecision(e);
      const message = `${what} failed: ${failureSummary(e)}`;
      throw decision.retry
        ? new TransientError(message, decision.waitMs, { cause: e })
        : new PermanentError(message, { cause: e });
    }
  }

  close(): Promise<void> {
    return this.channel.close();
  }
}
