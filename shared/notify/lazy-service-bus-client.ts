/**
 * A Service Bus client whose SDK is loaded on its first sender or receiver, not at start: in
 * Azure the triggers' links are the host's, so a worker that never publishes (a drain that folds
 * a sole chunk, a status read) never loads @azure/service-bus, and one that does pays for it on
 * its first send, which opens the connection then anyway.
 */
import type { ServiceBusClient } from '@azure/service-bus';

/** What the app's channels, inspector and dead-letter queues use of a ServiceBusClient. */
export type BusClient = Pick<ServiceBusClient, 'createSender' | 'createReceiver' | 'close'>;

export function lazyServiceBusClient(make: () => ServiceBusClient): BusClient {
  let client: ServiceBusClient | undefined;
  const get = (): ServiceBusClient => (client ??= make());
  return {
    createSender: (...args: Parameters<ServiceBusClient['createSender']>) => get().createSender(...args),
    createReceiver: ((...args: [string, ...unknown[]]) =>
      (get().createReceiver as (...a: unknown[]) => unknown)(...args)) as ServiceBusClient['createReceiver'],
    // Never made, nothing to close.
    close: () => client?.close() ?? Promise.resolve(),
  };
}
