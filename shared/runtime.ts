/**
 * The composition root: every client is built here, once, from validated settings.
 * Function adapters and the local host hold one Runtime for the life of the process.
 */
import type { ContainerClient } from '@azure/storage-blob';

import { ManifestStore } from './batch/manifest-store';
import { ProgressRecorder } from './batch/progress';
import type { Settings } from './config/settings';
import type { DrainControl } from './drain/dequeue-tasks';
import { type DrainOutcome, drainQueue } from './drain/drain-queue';
import { BlobLeaseSlots, type DrainSlots, LEASE_SECONDS } from './drain/slot';
import { perMessagesRule } from './drain/task-count';
import { type Clock, type DrainLogger, type MessageProcessor, systemClock } from './drain/types';
import { PermanentError } from './errors';
import { type ContainerKey, CONTAINERS, entityNames } from './names';
import type { WatchdogCheck, WorkDetected, WorkPublisher } from './notify/events';
import { createServiceBusClient, ServiceBusPublisher } from './notify/service-bus-publisher';
import type { PipelineContext } from './pipeline/context';
import { Finalizer } from './pipeline/finalize';
import { MapProcessor } from './pipeline/map-processor';
import { ReduceProcessor } from './pipeline/reduce-processor';
import { redrive, type RedriveRequest, type RedriveResult } from './poison/redrive';
import { StorageDrainQueue } from './queue/storage-queue';
import { createStorageClients, type StorageClients } from './storage/clients';
import { meterDelta, StorageMeter } from './storage/meter';
import { runWatchdogCheck, type WatchdogOutcome } from './watchdog/check-batch';

export interface RuntimeOptions {
  publisher?: WorkPublisher;
  clock?: Clock;
  log?: DrainLogger;
  meter?: StorageMeter;
}

export const consoleLogger: DrainLogger = {
  info: (m) => console.log(m),
  warn: (m) => console.warn(m),
  error: (m) => console.error(m),
};

export class Runtime {
  readonly meter: StorageMeter;
  readonly clients: StorageClients;
  readonly ctx: PipelineContext;
  readonly clock: Clock;
  private readonly slots: DrainSlots;
  private readonly map: MapProcessor;
  private readonly reduce: ReduceProcessor;
  private ensured: Promise<void> | undefined;
  /** Aborted by beginShutdown(): running drains stop taking work and hand the rest over. */
  private readonly stopping = new AbortController();
  /** Drains running in this process, by queue: a new event for one of them joins it. */
  private readonly active = new Map<string, DrainControl>();
  private running = 0;

  constructor(
    readonly settings: Settings,
    options: RuntimeOptions = {},
  ) {
    this.meter = options.meter ?? new StorageMeter();
    this.clock = options.clock ?? systemClock;
    const log = options.log ?? consoleLogger;
    this.clients = createStorageClients(settings.storage, this.meter);
    const names = entityNames(settings.namePrefix, settings.tuning.partitions);
    const containers = new Map<ContainerKey, ContainerClient>(CONTAINERS.map((k) => [k, this.clients.blobs.getContainerClient(names.container(k))]));
    const manifests = new ManifestStore(containers.get('batches') as ContainerClient);
    const publisher = options.publisher ?? defaultPublisher(settings);
    this.ctx = {
      names,
      container: (key) => containers.get(key) as ContainerClient,
      queues: this.clients.queues,
      manifests,
      progress: new ProgressRecorder(manifests),
      publisher,
      taxRates: settings.taxRates,
      tuning: settings.tuning,
      storageAccount: settings.storage.accountName,
      log,
      now: () => this.clock.now(),
      finalizeIfSettled: (m) => finalizer.ifSettled(m),
    };
    const finalizer = new Finalizer(this.ctx);
    this.slots = new BlobLeaseSlots(containers.get('leases') as ContainerClient, settings.tuning.drainSlots, log);
    this.map = new MapProcessor(this.ctx);
    this.reduce = new ReduceProcessor(this.ctx);
  }

  /**
   * Creates the queues and containers if missing, once per process. In Azure, infra/ has
   * provisioned them and this costs one request each at cold start.
   */
  ensureStorage(): Promise<void> {
    this.ensured ??= (async () => {
      const { names } = this.ctx;
      await Promise.all([
        ...CONTAINERS.map((k) => this.ctx.container(k).createIfNotExists()),
        ...names.allQueues().map((q) => this.clients.queues.getQueueClient(q).createIfNotExists()),
      ]);
    })().catch((e: unknown) => {
      this.ensured = undefined; // let the next call try again
      throw e;
    });
    return this.ensured;
  }

  /**
   * One wake-up: drain the queue the event names with the processor its role needs. If this
   * process is already draining that queue with live tasks, join them instead: they wake, reset
   * their back-off and take the new work, and this invocation returns at once.
   */
  async drain(event: WorkDetected): Promise<DrainOutcome | { kind: 'joined' }> {
    const { names, tuning } = this.ctx;
    const role = names.roleOf(event.queueName);
    // Only our own queues: an event is input from the network, not an instruction to read anything.
    if (!role || role !== event.role) throw new PermanentError(`WorkDetected names queue "${event.queueName}" with role ${event.role}, which this app does not drain`);
    if (this.active.get(event.queueName)?.nudge?.()) return { kind: 'joined' };
    await this.ensureStorage();
    const processor: MessageProcessor = role === 'input' ? this.map : this.reduce;
    const queue = new StorageDrainQueue(this.clients.queues, event.queueName, names.poisonQueue(event.queueName), () => this.clock.now());
    const before = this.meter.snapshot();
    const control: DrainControl = {};
    this.running++;
    // Latest drain wins the entry; an older one still running simply stops being joined.
    this.active.set(event.queueName, control);
    const outcome = await drainQueue(
      queue,
      processor,
      this.slots,
      {
        continuation: (delayMs) =>
          this.ctx.publisher.publish([{ storageAccount: this.ctx.storageAccount, queueName: event.queueName, payloadSize: 0, role }], { delayMs }),
      },
      this.clock,
      this.ctx.log,
      {
        batchSize: tuning.dequeueBatchSize,
        visibilityTimeoutSeconds: tuning.visibilityTimeoutSeconds,
        minIdleMs: tuning.minIdleMs,
        maxIdleMs: tuning.maxIdleMs,
        maxTasks: tuning.maxDequeueTasks,
        maxDequeueCount: tuning.maxDequeueCount,
        budgetMs: tuning.drainBudgetSeconds * 1000,
        taskCount: perMessagesRule(tuning.messagesPerTask, tuning.maxDequeueTasks),
        busyRetryMs: LEASE_SECONDS * 1000 + 1000,
        signal: this.stopping.signal,
        control,
      },
    ).finally(() => {
      this.running--;
      if (this.active.get(event.queueName) === control) this.active.delete(event.queueName);
    });
    const used = Object.entries(meterDelta(this.meter.snapshot(), before));
    // Process-wide counts, so concurrent drains overlap in this figure; totals are exact in /api/health.
    this.ctx.log.info(`${event.queueName}: drain ended (${outcome.kind}); storage transactions meanwhile: ${used.map(([k, v]) => `${k}=${v}`).join(' ') || 'none'}`);
    return outcome;
  }

  /** Moves poison messages back after a fix (CLI `redrive`, and the admin route). */
  async redrive(request: RedriveRequest): Promise<RedriveResult> {
    await this.ensureStorage();
    return redrive(this.ctx, request);
  }

  /** A scheduled per-batch check fired (queue `batch-watchdog`). */
  async watchdog(check: WatchdogCheck): Promise<WatchdogOutcome> {
    await this.ensureStorage();
    return runWatchdogCheck(this.ctx, check);
  }

  /** Drain invocations in progress in this process (tests assert none is left behind). */
  get drainsInProgress(): number {
    return this.running;
  }

  /** Graceful stop: drains finish their current batch, then publish a continuation for the rest. */
  beginShutdown(): void {
    this.stopping.abort();
  }

  async close(): Promise<void> {
    await this.ctx.publisher.close();
  }
}

function defaultPublisher(settings: Settings): WorkPublisher {
  if (settings.serviceBus) return new ServiceBusPublisher(createServiceBusClient(settings.serviceBus));
  const missing = (): Promise<void> => Promise.reject(new PermanentError('ServiceBusConnection is not configured: events cannot be published'));
  return { publish: missing, scheduleWatchdog: missing, close: () => Promise.resolve() };
}
