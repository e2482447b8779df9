/**
 * Two development brokers as a pair of namespaces: the primary with the repo's entities (plus
 * any a test adds), the secondary with the backlog queues infra/ provisions. Settings for an app
 * that uses both, and peeks that read a queue without consuming it.
 */
import type { ServiceBusReceivedMessage } from '@azure/service-bus';

import { backlogQueues } from '../../shared/names';
import { type EntitiesConfig, loadEntitiesConfig } from '../../tools/devstack/servicebus/config';
import { backlogEntities } from '../../tools/devstack/servicebus/secondary';
import { type BrokerHarness, startTestBroker } from './broker';

export interface PairedBrokers {
  primary: BrokerHarness;
  secondary: BrokerHarness;
  backlogQueues: string[];
  /** App settings for both connections and the failover timing. */
  env(timing: { failoverIntervalMs: number; pingIntervalMs: number }): Record<string, string>;
  /** Every message in a queue or subscription of the given broker, without consuming any (bounded). */
  peekAll(harness: BrokerHarness, path: string, subscription?: string): Promise<ServiceBusReceivedMessage[]>;
  /** Messages in all backlog queues, by queue. */
  backlog(): Promise<Map<string, ServiceBusReceivedMessage[]>>;
  close(): Promise<void>;
}

export async function startPairedBrokers(
  options: { backlogQueueCount?: number; primaryEntities?: EntitiesConfig } = {},
): Promise<PairedBrokers> {
  const count = options.backlogQueueCount ?? 2;
  const [primary, secondary] = await Promise.all([
    startTestBroker({ entities: options.primaryEntities ?? loadEntitiesConfig() }),
    startTestBroker({ entities: backlogEntities(count) }),
  ]);
  const peekAll = async (
    harness: BrokerHarness,
    path: string,
    subscription?: string,
  ): Promise<ServiceBusReceivedMessage[]> => {
    const client = harness.client();
    const receiver = subscription ? client.createReceiver(path, subscription) : client.createReceiver(path);
    try {
      const all: ServiceBusReceivedMessage[] = [];
      for (let i = 0; i < 100; i++) {
        const page = await receiver.peekMessages(100); // each peek continues after the last one
        all.push(...page);
        if (page.length < 100) break;
      }
      return all;
    } finally {
      await receiver.close();
    }
  };
  const queues = backlogQueues(count);
  return {
    primary,
    secondary,
    backlogQueues: queues,
    env: (t) => ({
      ServiceBusConnection: primary.broker.connectionString,
      ServiceBusSecondaryConnection: secondary.broker.connectionString,
      PUSHDRAIN_BACKLOG_QUEUE_COUNT: String(count),
      PUSHDRAIN_FAILOVER_INTERVAL_MS: String(t.failoverIntervalMs),
      PUSHDRAIN_PING_INTERVAL_MS: String(t.pingIntervalMs),
    }),
    peekAll,
    backlog: async () => new Map(await Promise.all(queues.map(async (q) => [q, await peekAll(secondary, q)] as const))),
    close: async () => {
      await Promise.all([primary.close(), secondary.close()]);
    },
  };
}
