/**
 * The app's publisher over one namespace: sends, schedules and cancels shared/bus/'s messages on
 * their entities, with failures classified by the one retry table. Retries are short: the SDK's
 * default 30 s delay would hold an HTTP ingest hostage.
 */
import type * as ServiceBus from '@azure/service-bus';

import type { BusPublisher, ScheduledMessages } from '../bus/bus-publisher';
import { describeMessages, type OutgoingMessage } from '../bus/outgoing-message';
import type { ServiceBusConnection } from '../config/connections';
import { PermanentError, TransientError } from '../errors';
import { TOPIC } from '../names';
import { failureSummary, retryDecision } from '../retry/transient';
import { credentialFor } from '../storage/clients';
import { type BusClient, lazyServiceBusClient } from './lazy-service-bus-client';
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

export class ServiceBusPublisher implements BusPublisher {
  private readonly channel: ServiceBusChannel;

  /** @param topic the `work-detected` topic's name in this namespace (the bench gives each app its own). */
  constructor(
    client: BusClient,
    private readonly topic: string = TOPIC,
    private readonly now: () => number = Date.now,
  ) {
    this.channel = new ServiceBusChannel(client);
  }

  async send(entity: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.wrap(`sending ${describeMessages(messages)} to ${entity}`, () =>
      this.channel.send(this.named(entity), messages),
    );
  }

  schedule(entity: string, messages: readonly OutgoingMessage[], delayMs: number): Promise<ScheduledMessages | void> {
    return this.wrap(`scheduling ${describeMessages(messages)} on ${entity}`, () =>
      this.channel.send(this.named(entity), messages, new Date(this.now() + delayMs)),
    );
  }

  async cancel(entity: string, sequenceNumbers: readonly string[]): Promise<void> {
    await this.wrap(`cancelling ${sequenceNumbers.length} scheduled message(s) on ${entity}`, () =>
      this.channel.cancel(this.named(entity), sequenceNumbers),
    );
  }

  private named(entity: string): string {
    return entity === TOPIC ? this.topic : entity;
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
