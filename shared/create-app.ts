/**
 * The composition root: every client, adapter and pipeline step is built here, once, from
 * validated settings. Nothing else in shared/ picks an adapter or builds an SDK client.
 */
import { createHash } from 'node:crypto';

import { type AppParts, PushdrainApp } from './app';
import { ManifestStore } from './batch/manifest';
import { PendingNotifications } from './batch/pending-notifications';
import { ProgressRecorder } from './batch/progress';
import { BatchReader } from './batch/read-batch';
import type { Settings } from './config/settings';
import { DrainCoordinator } from './drain/coordinator';
import { PermanentError } from './errors';
import { Ingestor } from './ingest/ingest';
import { layout } from './layout';
import { backlogQueues, CONTAINERS, entityNames } from './names';
import { Notifier, type WorkPublisher } from './notify/events';
import { PairedPublisher } from './notify/paired-publisher';
import { ServiceBusChannel } from './notify/service-bus-channel';
import { createServiceBusClient, ServiceBusPublisher } from './notify/service-bus-publisher';
import { type RejectedBacklogMessage, Syphon } from './notify/syphon';
import { Finalizer } from './pipeline/finalize';
import { MapProcessor } from './pipeline/map-processor';
import { ReduceProcessor } from './pipeline/reduce-processor';
import { Redriver } from './poison/redrive';
import { type BlobStore, type Clock, consoleLogger, type Logger, systemClock } from './ports';
import { AzureQueueStore } from './queue/storage-queue';
import { AzureBlobStore } from './storage/azure-blob-store';
import { createStorageClients } from './storage/clients';
import { BlobLeaseSlots } from './storage/lease-slots';
import { StorageMeter } from './storage/meter';
import { Sweeper } from './sweep/incoming-sweep';
import { Watchdog } from './watchdog/check-batch';

export interface AppOptions {
  /** @defaultValue Service Bus from settings.serviceBus */
  publisher?: WorkPublisher;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** @defaultValue the console */
  log?: Logger;
  /** @defaultValue a new meter */
  meter?: StorageMeter;
}

export function composeApp(settings: Settings, options: AppOptions = {}): AppParts {
  const { tuning } = settings;
  const meter = options.meter ?? new StorageMeter();
  const clock = options.clock ?? systemClock;
  const log = options.log ?? consoleLogger;
  const now = (): number => clock.now();
  const names = entityNames(settings.namePrefix, tuning.partitions);
  const clients = createStorageClients(settings.storage, meter);
  const blobs = new AzureBlobStore(clients.blobs, names.container);
  const queues = new AzureQueueStore(clients.queues, names.poisonQueue, now);
  const manifests = new ManifestStore(blobs);
  const progress = new ProgressRecorder(manifests);
  const messaging = composeMessaging(settings, options, clock, log, blobs);
  const notifier = new Notifier(messaging.publisher, settings.storage.accountName, names, tuning.watchdogSlaSeconds);
  const pending = new PendingNotifications(blobs, manifests, notifier);
  const finalizer = new Finalizer(blobs, manifests, now, log);
  const ingestor = new Ingestor({ blobs, queues, manifests, notifier, pending, finalizer, names, chunkSize: tuning.chunkSize, now, log });
  const map = new MapProcessor({ blobs, queues, notifier, progress, finalizer, resultsQueue: names.resultsQueue, taxRates: settings.taxRates });
  const reduce = new ReduceProcessor(progress, finalizer, log);
  return {
    settings,
    names,
    meter,
    clock,
    log,
    blobs,
    queues,
    manifests,
    progress,
    notifier,
    finalizer,
    ingestor,
    reader: new BatchReader(manifests, blobs),
    sweeper: new Sweeper({ blobs, ingestor, pending, maxFiles: tuning.sweepMaxFiles, maxInflatedBytes: tuning.maxInflatedBytes, now, log }),
    map,
    reduce,
    drains: new DrainCoordinator({
      queues,
      slots: new BlobLeaseSlots(blobs, tuning.drainSlots, log),
      processors: { input: map, output: reduce },
      continuation: (queue, delayMs) => notifier.continuation(queue, delayMs),
      clock,
      log,
      tuning,
    }),
    redriver: new Redriver({ queues, manifests, notifier, names, log }),
    watchdog: new Watchdog({ manifests, progress, finalizer, blobs, queues, notifier, names, maxChecks: tuning.watchdogMaxChecks, log }),
    syphon: messaging.syphon,
    provision: async () => {
      await Promise.all([blobs.ensureContainers(CONTAINERS), queues.ensureQueues(names.allQueues())]);
    },
  };
}

/** The application, wired from settings. */
export function createApp(settings: Settings, options: AppOptions = {}): PushdrainApp {
  return new PushdrainApp(composeApp(settings, options));
}

/**
 * With ServiceBusConnection only: one namespace, as ever. With ServiceBusSecondaryConnection
 * too: sends fail over to the secondary's backlog queues, and the syphon restores them.
 */
function composeMessaging(settings: Settings, options: AppOptions, clock: Clock, log: Logger, blobs: BlobStore): { publisher: WorkPublisher; syphon: Syphon | undefined } {
  const { serviceBus, serviceBusSecondary, tuning } = settings;
  if (!serviceBus || !serviceBusSecondary) return { publisher: options.publisher ?? defaultPublisher(settings), syphon: undefined };
  const primary = new ServiceBusChannel(createServiceBusClient(serviceBus));
  const setAside = async (r: RejectedBacklogMessage): Promise<void> => {
    const body = Buffer.from(JSON.stringify(r, null, 2));
    const id = r.messageId ?? createHash('sha256').update(body).digest('hex').slice(0, 32);
    await blobs.write(layout.backlogRejection(id), body, { contentType: 'application/json' });
  };
  const syphon = new Syphon({ primary, clock, log, pingIntervalMs: tuning.pingIntervalMs, setAside });
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
  return { publisher, syphon };
}

function defaultPublisher(settings: Settings): WorkPublisher {
  if (settings.serviceBus) return new ServiceBusPublisher(createServiceBusClient(settings.serviceBus));
  const missing = (): Promise<void> => Promise.reject(new PermanentError('ServiceBusConnection is not configured: events cannot be published'));
  return { publish: missing, scheduleWatchdog: missing, close: () => Promise.resolve() };
}
