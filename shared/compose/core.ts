/**
 * The parts every use case builds on: the clients, the meter and its observer, the stores, the
 * notifier and the Service Bus side, built once from validated settings.
 */
import { ManifestStore } from '../batch/manifest-store';
import { OpenBatches } from '../batch/open-batches';
import { SubmitterIndex } from '../batch/submitter-index';
import type { Settings } from '../config/settings';
import { countedPublisher } from '../cost/counted-publisher';
import { UsageLedger } from '../cost/usage-ledger';
import { type EntityNames, entityNames } from '../names';
import { Notifier } from '../notify/notifier';
import { type Clock, consoleLogger, type Logger, type QueueStore, systemClock } from '../ports';
import { AzureQueueStore } from '../queue/storage-queue';
import { Activity } from '../status/activity';
import { AppObserver } from '../status/app-observer';
import { recordingDepths } from '../status/depth-recording';
import { AzureBlobStore } from '../storage/azure-blob-store';
import { createStorageClients } from '../storage/clients';
import { StorageMeter } from '../storage/meter';
import { MissingEntities } from '../storage/missing-entities';
import { NO_TELEMETRY, type Telemetry } from '../telemetry/telemetry';
import { MemoryBudget } from '../util/memory-budget';
import type { AppOptions } from './app-options';
import { type BusParts, serviceBus } from './service-bus-parts';

export interface AppCore {
  settings: Settings;
  options: AppOptions;
  names: EntityNames;
  meter: StorageMeter;
  /** What each batch used and its manifest does not show yet (shared/cost/usage-ledger.ts). */
  usage: UsageLedger;
  /** Queues and containers Storage said do not exist (health shows them). */
  missing: MissingEntities;
  clock: Clock;
  now: () => number;
  log: Logger;
  activity: Activity;
  observer: AppObserver;
  telemetry: Telemetry;
  blobs: AzureBlobStore;
  queues: QueueStore;
  manifests: ManifestStore;
  open: OpenBatches;
  owners: SubmitterIndex;
  notifier: Notifier;
  bus: BusParts;
  /** The batch data this process holds at once (map steps wait for room). */
  memory: MemoryBudget;
}

export function composeCore(settings: Settings, options: AppOptions): AppCore {
  const { tuning } = settings;
  const meter = options.meter ?? new StorageMeter();
  const clock = options.clock ?? systemClock;
  const log = options.log ?? consoleLogger;
  const now = (): number => clock.now();
  const names = entityNames(settings.namePrefix, tuning.partitions);
  const missing = new MissingEntities();
  const clients = createStorageClients(settings.storage, meter, { missing });
  const activity = new Activity(now);
  const telemetry = options.telemetry ?? NO_TELEMETRY;
  const observer = new AppObserver(activity, telemetry.metrics);
  meter.onCount((op, n) => observer.storage(op, n));
  const blobs = new AzureBlobStore(clients.blobs, names.container);
  // Leftover usage waits out a drain's wind-down (its back-off tops out at maxIdleMs): one flush per batch.
  const usage = new UsageLedger(2 * tuning.maxIdleMs);
  meter.onCount((op, n) => usage.countStorage(op, n));
  const manifests = new ManifestStore(blobs, clock, usage);
  // Leftovers, if the operator pays for them: a write that changes nothing but carries the usage
  // (a manifest gone by then is left alone). Without a flusher they wait for a write that may not come.
  if (settings.prices.leftovers === 'write') usage.flushWith((batchId) => manifests.update(batchId, (m) => m));
  const bus = serviceBus({ settings, options, clock, log, blobs });
  const queues = recordingDepths(new AzureQueueStore(clients.queues, names.poisonQueue, now), (queue, depth) =>
    observer.queueDepth(queue, depth),
  );
  return {
    settings,
    options,
    names,
    meter,
    usage,
    missing,
    clock,
    now,
    log,
    activity,
    observer,
    telemetry,
    blobs,
    queues,
    manifests,
    open: new OpenBatches(blobs),
    owners: new SubmitterIndex(blobs),
    notifier: new Notifier(
      countedPublisher(bus.publisher, usage),
      settings.storage.accountName,
      names,
      tuning.watchdogSlaSeconds,
    ),
    bus,
    memory: MemoryBudget.forInstance(settings.instance.memoryMb),
  };
}
