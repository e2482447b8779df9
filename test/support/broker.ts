/**
 * Starts the development Service Bus broker for one test file and hands out real SDK clients
 * with fast retries (the SDK default is a fixed 30 s delay). `close()` closes every client,
 * then the broker.
 */
import { after, before } from 'node:test';

import { ServiceBusClient, type ServiceBusReceivedMessage, type ServiceBusReceiver } from '@azure/service-bus';

import type { Broker, BrokerOptions } from '../../tools/devstack/servicebus/broker';
import { startBroker } from '../../tools/devstack/servicebus/broker';
import type { QueueConfig } from '../../tools/devstack/servicebus/config';

interface ClientOptions {
  /** @defaultValue 3 */
  maxRetries?: number;
  /** Per-try timeout. @defaultValue 10000 */
  timeoutInMs?: number;
}

export interface BrokerHarness {
  broker: Broker;
  client(options?: ClientOptions): ServiceBusClient;
  /** Closes the clients created so far, keeping the broker. */
  closeClients(): Promise<void>;
  /** Closes every client, then stops the broker. */
  close(): Promise<void>;
}

export async function startTestBroker(options: BrokerOptions = {}): Promise<BrokerHarness> {
  const broker = await startBroker(options);
  const clients = new Set<ServiceBusClient>();
  const closeClients = async (): Promise<void> => {
    const all = [...clients];
    clients.clear();
    await Promise.all(all.map((c) => c.close()));
  };
  return {
    broker,
    client: ({ maxRetries = 3, timeoutInMs = 10_000 } = {}) => {
      const c = new ServiceBusClient(broker.connectionString, {
        retryOptions: { retryDelayInMs: 100, maxRetryDelayInMs: 200, maxRetries, timeoutInMs },
      });
      clients.add(c);
      return c;
    },
    closeClients,
    close: async () => {
      await closeClients();
      await broker.stop();
    },
  };
}

/**
 * A broker for the file, or for the describe block it is called in: started before its tests,
 * closed after them. The harness it returns reaches the broker once it is started.
 */
export function useBroker(options: BrokerOptions = {}): BrokerHarness {
  let started: BrokerHarness | undefined;
  const harness = (): BrokerHarness => {
    if (!started) throw new Error('useBroker: the broker starts before the tests; use it inside one');
    return started;
  };
  before(async () => {
    started = await startTestBroker(options);
  });
  after(async () => {
    await started?.close();
  });
  return {
    get broker() {
      return harness().broker;
    },
    client: (clientOptions) => harness().client(clientOptions),
    closeClients: () => harness().closeClients(),
    close: () => harness().close(),
  };
}

/** A queue entry with test-friendly defaults (short lock). */
export function queue(name: string, overrides: Partial<QueueConfig> = {}): QueueConfig {
  return { name, lockDuration: 'PT5S', maxDeliveryCount: 10, ...overrides };
}

/**
 * Receives until `count` messages arrived or `timeoutMs` passed (bounded in calls and time).
 * Asks for exactly the missing number, so the SDK's 1 s wait-after-first-message is rarely hit.
 */
export async function receiveExactly(
  receiver: ServiceBusReceiver,
  count: number,
  timeoutMs = 5000,
): Promise<ServiceBusReceivedMessage[]> {
  const got: ServiceBusReceivedMessage[] = [];
  const deadline = Date.now() + timeoutMs;
  for (let calls = 0; got.length < count && calls < 1000; calls++) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    got.push(...(await receiver.receiveMessages(count - got.length, { maxWaitTimeInMs: Math.min(left, 1000) })));
  }
  return got;
}
