/**
 * The Service Bus side: the publisher (with ServiceBusSecondaryConnection, a paired publisher that
 * fails over to the secondary's backlog queues, and the syphon that restores them), the
 * inspector for the status report and the dead-letter queues (redrive, health counts), all on
 * the primary. Its one client serves them all; the publisher closes it.
 */
import type { BusPublisher } from '../bus/bus-publisher';
import type { Settings } from '../config/settings';
import { PermanentError } from '../errors';
import { backlogQueues } from '../names';
import { writeBacklogRejection } from '../notify/backlog-rejection';
import type { DeadLetterQueues } from '../notify/dead-letters';
import type { BusInspector } from '../notify/inspection';
import { PairedPublisher } from '../notify/paired-publisher';
import { ServiceBusChannel } from '../notify/service-bus-channel';
import { ServiceBusDeadLetters } from '../notify/service-bus-dead-letters';
import { ServiceBusInspector } from '../notify/service-bus-inspector';
import { createServiceBusClient, ServiceBusPublisher } from '../notify/service-bus-publisher';
import { Syphon } from '../notify/syphon';
import type { BlobStore, Clock, Logger } from '../ports';
import type { AppOptions } from './app-options';

export interface BusParts {
  publisher: BusPublisher;
  inspector: BusInspector | undefined;
  deadLetters: DeadLetterQueues | undefined;
  syphon: Syphon | undefined;
}

interface BusDeps {
  settings: Settings;
  options: AppOptions;
  clock: Clock;
  log: Logger;
  /** Where the syphon sets malformed backlog messages aside. */
  blobs: BlobStore;
}

export function serviceBus({ settings, options, clock, log, blobs }: BusDeps): BusParts {
  const { serviceBus: connection, serviceBusSecondary, tuning } = settings;
  if (!connection) {
    const missing = (): Promise<void> =>
      Promise.reject(new PermanentError('ServiceBusConnection is not configured: events cannot be published'));
    return {
      publisher: options.publisher ?? { send: missing, schedule: missing, close: () => Promise.resolve() },
      inspector: options.inspector,
      deadLetters: undefined,
      syphon: undefined,
    };
  }
  const client = createServiceBusClient(connection);
  // The publisher closes the client it shares; a publisher passed in (tests) leaves that to the dead-letter queues.
  const deadLetters = new ServiceBusDeadLetters(client, options.publisher !== undefined);
  const inspector = options.inspector ?? new ServiceBusInspector(client, false);
  if (!serviceBusSecondary)
    return {
      publisher: options.publisher ?? new ServiceBusPublisher(client),
      inspector,
      deadLetters,
      syphon: undefined,
    };
  const primary = new ServiceBusChannel(client);
  const syphon = new Syphon({
    primary,
    clock,
    log,
    pingIntervalMs: tuning.pingIntervalMs,
    setAside: (r) => writeBacklogRejection(blobs, r),
  });
  const publisher =
    options.publisher ??
    new PairedPublisher({
      primary,
      secondary: new ServiceBusChannel(createServiceBusClient(serviceBusSecondary)),
      backlogQueues: backlogQueues(tuning.backlogQueueCount),
      failoverIntervalMs: tuning.failoverIntervalMs,
      pingIntervalMs: tuning.pingIntervalMs,
      clock,
      log,
    });
  return { publisher, inspector, deadLetters, syphon };
}
