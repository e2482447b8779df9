/**
 * The composition root: every client, adapter and pipeline step is built here, once, from
 * validated settings. Nothing else in shared/ picks an adapter or builds an SDK client.
 */
import { type AppParts, PushdrainApp } from './app';
import { Access } from './auth/access';
import { ManifestListing } from './batch/batch-list';
import { BatchPages } from './batch/batch-pages';
import { ManifestStore, OpenBatches } from './batch/manifest';
import { ProgressRecorder } from './batch/progress';
import { SubmitterIndex } from './batch/submitter-index';
import { RecentResults } from './billing/result-blob';
import type { Settings } from './config/settings';
import { Continuations } from './drain/continuations';
import { DrainCoordinator } from './drain/coordinator';
import { PermanentError } from './errors';
import type { HostLookup } from './events/address-guard';
import { deliveryAttempt, deliveryWarmer } from './events/delivery-attempt';
import { redriveDeliveries } from './events/delivery-redrive';
import { EndpointAgents } from './events/endpoint-agents';
import { EventDelivery } from './events/event-delivery';
import { TestEvents } from './events/test-event';
import { chunkRule } from './ingest/chunk-size';
import { Ingestor } from './ingest/ingest';
import { parseWorkPointer } from './model/chunk-codec';
import { backlogQueues, BATCH_EVENTS_TOPIC, CONTAINERS, entityNames, FUNCTION_NAMES } from './names';
import { writeBacklogRejection } from './notify/backlog-rejection';
import type { DeadLetterQueues } from './notify/dead-letters';
import { Notifier, type WorkPublisher } from './notify/events';
import type { BusInspector } from './notify/inspection';
import { PairedPublisher } from './notify/paired-publisher';
import { ServiceBusChannel } from './notify/service-bus-channel';
import { ServiceBusDeadLetters } from './notify/service-bus-dead-letters';
import { ServiceBusInspector } from './notify/service-bus-inspector';
import { createServiceBusClient, ServiceBusPublisher } from './notify/service-bus-publisher';
import { Syphon } from './notify/syphon';
import { BatchReader, Finalizer } from './pipeline/finalize';
import { MapProcessor } from './pipeline/map-processor';
import { ReduceProcessor } from './pipeline/reduce-processor';
import { Redriver } from './poison/redrive';
import { type BlobStore, type Clock, consoleLogger, type Logger, systemClock } from './ports';
import { AzureQueueStore } from './queue/storage-queue';
import { ScaleAgent } from './scale/agent';
import { lazyArmScaleTarget } from './scale/arm-target';
import { ScaleStateStore } from './scale/state';
import type { ScaleTarget } from './scale/target';
import { Activity } from './status/activity';
import { DeadLetterTally } from './status/dead-letter-tally';
import { DeliveryStatusReader } from './status/delivery-status';
import { recordingDepths } from './status/depth-recording';
import { StatusReporter } from './status/status-report';
import { AzureBlobStore } from './storage/azure-blob-store';
import { createStorageClients, credentialFor } from './storage/clients';
import { BlobLeaseSlots } from './storage/lease-slots';
import { StorageMeter } from './storage/meter';
import { Sweeper } from './sweep/incoming-sweep';
import { drainCounters } from './telemetry/drain-counters';
import { NO_TELEMETRY, type Telemetry } from './telemetry/telemetry';
import { Watchdog } from './watchdog/check-batch';
import { Recovery } from './watchdog/recovery';

/** A pending delivery this long past due was lost with its process: recovery re-attempts it. */
const EVENT_LOST_AFTER_MS = 120_000;

export interface AppOptions {
  /** @defaultValue Service Bus from settings.serviceBus */
  publisher?: WorkPublisher;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** @defaultValue the console */
  log?: Logger;
  /** @defaultValue a new meter */
  meter?: StorageMeter;
  /** @defaultValue peeks on Service Bus from settings.serviceBus (none without it) */
  inspector?: BusInspector;
  /** @defaultValue the management API for settings.scale.site (tests pass one on a local endpoint) */
  scaleTarget?: ScaleTarget;
  /** How callback hosts resolve before each delivery. @defaultValue the system resolver */
  lookup?: HostLookup;
  /** Started before the app (start-telemetry.ts). @defaultValue NO_TELEMETRY */
  telemetry?: Telemetry;
}

export function composeApp(settings: Settings, options: AppOptions = {}): AppParts {
  const { tuning } = settings;
  const meter = options.meter ?? new StorageMeter();
  const clock = options.clock ?? systemClock;
  const log = options.log ?? consoleLogger;
  const now = (): number => clock.now();
  const names = entityNames(settings.namePrefix, tuning.partitions);
  const clients = createStorageClients(settings.storage, meter);
  const activity = new Activity(now);
  const telemetry = options.telemetry ?? NO_TELEMETRY;
  const { metrics } = telemetry;
  meter.onCount((op, n) => {
    activity.storage(n);
    metrics.storage(op, n);
  });
  // The status report reads through clients of its own meter: watching is not what the app costs.
  const statusMeter = new StorageMeter();
  const statusClients = createStorageClients(settings.storage, statusMeter);
  const statusQueues = new AzureQueueStore(statusClients.queues, names.poisonQueue, now);
  const statusManifests = new ManifestStore(new AzureBlobStore(statusClients.blobs, names.container));
  const blobs = new AzureBlobStore(clients.blobs, names.container);
  const bus = serviceBus({ settings, options, clock, log, blobs });
  const deadLetters = bus.deadLetters;
  const tally =
    deadLetters || bus.inspector
      ? new DeadLetterTally({
          count: deadLetters && (() => deadLetters.count()),
          now,
          log,
          onCount: (total) => metrics.deadLetters(total),
        })
      : undefined;
  const inspector = bus.inspector && tally ? tally.recording(bus.inspector) : bus.inspector;
  const queues = recordingDepths(new AzureQueueStore(clients.queues, names.poisonQueue, now), (queue, depth) => {
    activity.depths({ [queue]: depth });
    metrics.queueDepth(queue, depth);
  });
  const manifests = new ManifestStore(blobs, clock);
  const notifier = new Notifier(bus.publisher, settings.storage.accountName, names, tuning.watchdogSlaSeconds);
  const open = new OpenBatches(blobs);
  // One pool per app: a receiver's connection is kept between batches.
  const agents = new EndpointAgents();
  const owners = new SubmitterIndex(blobs);
  const events = new EventDelivery({
    manifests,
    open,
    targets: () => settings.events.webhookUrls.map((target) => ({ kind: 'webhook' as const, target })),
    // The topic gets every batch's event wherever Service Bus is configured.
    topic:
      settings.serviceBus && bus.publisher.publishBatchEvent
        ? { name: BATCH_EVENTS_TOPIC, publish: (e) => bus.publisher.publishBatchEvent!(e) }
        : undefined,
    attempt: deliveryAttempt({
      settings: settings.events,
      now,
      publish: bus.publisher.publishBatchEvent && ((e) => bus.publisher.publishBatchEvent!(e)),
      lookup: options.lookup,
      agents,
    }),
    warm: deliveryWarmer({ settings: settings.events, lookup: options.lookup, agents }),
    scheduleRetry: async (check, delayMs) => {
      await bus.publisher.scheduleWatchdog(check, delayMs);
    },
    poison: (record) => queues.send(names.deliveriesPoisonQueue, record),
    retryScheduleSeconds: settings.events.retryScheduleSeconds,
    lostAfterMs: EVENT_LOST_AFTER_MS,
    now,
    log,
    counted: (kind, outcome) => metrics.delivery(outcome, kind),
  });
  // What the map step writes, the finalizer of a batch drained in this process reads back from memory.
  const recent = new RecentResults();
  const finalizer = new Finalizer(blobs, manifests, open, now, log, recent, events, telemetry, notifier);
  const progress = new ProgressRecorder(manifests, now, finalizer);
  const ingestor = new Ingestor({
    blobs,
    queues,
    manifests,
    notifier,
    open,
    owners,
    finalizer,
    names,
    chunkSize: tuning.chunkSize,
    chunks: chunkRule(tuning),
    now,
    log,
    telemetry,
  });
  const watchdog = new Watchdog({
    manifests,
    progress,
    finalizer,
    blobs,
    queues,
    notifier,
    names,
    maxChecks: tuning.watchdogMaxChecks,
    log,
    telemetry,
  });
  const map = new MapProcessor({
    blobs,
    queues,
    notifier,
    progress,
    finalizer,
    recent,
    resultsQueue: names.resultsQueue,
    taxRates: settings.taxRates,
    telemetry,
    now,
  });
  const reduce = new ReduceProcessor(progress, finalizer, log, telemetry);
  const continuations = new Continuations({
    publish: (queue, delayMs) => notifier.continuation(queue, delayMs),
    depth: (queue) => queues.depth(queue),
    clock,
    log,
  });
  const drains = new DrainCoordinator({
    queues,
    slots: new BlobLeaseSlots(
      blobs,
      (queue) => (queue === names.resultsQueue ? tuning.resultsDrainSlots : tuning.drainSlots),
      log,
    ),
    processors: { map: activity.countingBilled(map, (m) => parseWorkPointer(m.text).count), reduce },
    continuation: (queue, delayMs) => continuations.schedule(queue, delayMs),
    seenEmpty: (queue, lookedAt) => continuations.seenEmpty(queue, lookedAt),
    fanOut: async (queue, count) => {
      await notifier.fanOut(queue, count);
      metrics.fanOut(count);
    },
    clock,
    log,
    tuning,
    onRunning: (n) => {
      activity.drains(n);
      metrics.drainsInProgress(n);
    },
    counters: drainCounters(metrics, names.stageOf),
  });
  const recovery = new Recovery({
    open,
    manifests,
    finalizer,
    events,
    notifier,
    watchdog,
    names,
    drain: (queue, stage) => drains.drain(queue, stage),
    maxBatches: tuning.sweepMaxBatches,
    now,
    log,
    telemetry,
  });
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
    events,
    ingestor,
    reader: new BatchReader(manifests, blobs),
    batchPages: new BatchPages(blobs, owners),
    recovery,
    sweeper: new Sweeper({
      blobs,
      ingestor,
      recovery,
      stallMs: tuning.stallSeconds * 1000,
      maxFiles: tuning.sweepMaxFiles,
      maxInflatedBytes: tuning.maxInflatedBytes,
      now,
      log,
    }),
    map,
    reduce,
    drains,
    continuations,
    redriver: new Redriver({
      queues,
      manifests,
      open,
      notifier,
      names,
      log,
      deadLetters,
      deliveries: (req) =>
        redriveDeliveries({ queues, manifests, open, events, poisonQueue: names.deliveriesPoisonQueue, now, log }, req),
    }),
    watchdog,
    scaleAgent: new ScaleAgent({
      settings: settings.scale,
      store: new ScaleStateStore(blobs),
      depth: async () =>
        (await Promise.all(names.inputQueues().map((q) => queues.depth(q)))).reduce((a, b) => a + b, 0),
      target:
        options.scaleTarget ??
        lazyArmScaleTarget(settings.scale, FUNCTION_NAMES.drain, () => credentialFor(settings.scale.identity)),
      scheduleCheck: (delayMs) => notifier.scheduleScaleCheck(delayMs),
      clock,
      log,
    }),
    access: new Access(settings.auth),
    activity,
    inspector,
    deadLetters,
    deadLetterTally: tally,
    status: new StatusReporter({
      queues: statusQueues,
      names,
      batches: new ManifestListing(new AzureBlobStore(statusClients.blobs, names.container), statusManifests),
      inspector,
      drains,
      activity,
      meter,
      statusMeter,
      now,
      instanceId: `i-${Math.floor(clock.random() * 0x1_0000_0000)
        .toString(16)
        .padStart(8, '0')}`,
      deliveries: new DeliveryStatusReader({
        manifests: statusManifests,
        queues: statusQueues,
        poisonQueue: names.deliveriesPoisonQueue,
        now,
      }),
    }),
    syphon: bus.syphon,
    // The attempt real webhook deliveries make (signing, guard, timeout), for a probe that records nothing.
    testEvents: new TestEvents({
      webhookUrls: () => settings.events.webhookUrls,
      attempt: deliveryAttempt({ settings: settings.events, now, lookup: options.lookup }),
      now,
    }),
    telemetry,
    provision: async () => {
      await Promise.all([blobs.ensureContainers(CONTAINERS), queues.ensureQueues(names.allQueues())]);
    },
  };
}

/** The application, wired from settings. */
export function createApp(settings: Settings, options: AppOptions = {}): PushdrainApp {
  return new PushdrainApp(composeApp(settings, options));
}

interface BusParts {
  publisher: WorkPublisher;
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

/**
 * The Service Bus side: the publisher (with ServiceBusSecondaryConnection, a paired publisher that
 * fails over to the secondary's backlog queues, and the syphon that restores them), the
 * inspector for the status report and the dead-letter queues (redrive, health counts), all on
 * the primary. Its one client serves them all; the publisher closes it.
 */
function serviceBus({ settings, options, clock, log, blobs }: BusDeps): BusParts {
  const { serviceBus: connection, serviceBusSecondary, tuning } = settings;
  if (!connection) {
    const missing = (): Promise<void> =>
      Promise.reject(new PermanentError('ServiceBusConnection is not configured: events cannot be published'));
    return {
      publisher: options.publisher ?? { publish: missing, scheduleWatchdog: missing, close: () => Promise.resolve() },
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
