/**
 * The application façade: the one object every adapter talks to (function triggers, the
 * local host, the CLI). Each method is one use case; it makes sure Storage is provisioned,
 * then hands over to the pipeline step that owns the work. Built by create-app.ts.
 */
import type { BatchStatusBody, ManifestStore } from './batch/manifest';
import type { ProgressRecorder } from './batch/progress';
import type { BatchReader, ReportLookup } from './batch/read-batch';
import type { Settings } from './config/settings';
import type { DrainCoordinator, DrainResult } from './drain/coordinator';
import { PermanentError } from './errors';
import { bufferSource } from './ingest/body';
import type { Ingestor, IngestResult } from './ingest/ingest';
import type { BodyFormat } from './ingest/records';
import type { EntityNames } from './names';
import type { BacklogDelivery } from './notify/backlog-message';
import type { Notifier, WatchdogCheck, WorkDetected } from './notify/events';
import type { PublisherHealth } from './notify/failover-state';
import type { Syphon, SyphonOutcome } from './notify/syphon';
import type { Finalizer } from './pipeline/finalize';
import type { MapProcessor } from './pipeline/map-processor';
import type { ReduceProcessor } from './pipeline/reduce-processor';
import type { Redriver, RedriveRequest, RedriveResult } from './poison/redrive';
import type { BlobStore, Clock, Logger, QueueStore } from './ports';
import { meterDelta, type MeterSnapshot, type StorageMeter } from './storage/meter';
import type { Sweeper, SweepResult } from './sweep/incoming-sweep';
import type { Watchdog, WatchdogOutcome } from './watchdog/check-batch';

/** Everything the composition root built; the façade uses the steps, the bench some parts. */
export interface AppParts {
  settings: Settings;
  names: EntityNames;
  meter: StorageMeter;
  clock: Clock;
  log: Logger;
  blobs: BlobStore;
  queues: QueueStore;
  manifests: ManifestStore;
  progress: ProgressRecorder;
  notifier: Notifier;
  finalizer: Finalizer;
  ingestor: Ingestor;
  reader: BatchReader;
  sweeper: Sweeper;
  map: MapProcessor;
  reduce: ReduceProcessor;
  drains: DrainCoordinator;
  redriver: Redriver;
  watchdog: Watchdog;
  /** Restores backlog messages to the primary; only with a secondary namespace configured. */
  syphon: Syphon | undefined;
  /** Creates the queues and containers if missing (infra/ provisions them in Azure). */
  provision(): Promise<void>;
}

/** A batch as an HTTP request carries it. */
export interface Submission {
  body: Buffer;
  format: BodyFormat;
  gzip: boolean;
  idempotencyKey?: string;
}

export class PushdrainApp {
  private provisioned: Promise<void> | undefined;

  constructor(readonly parts: AppParts) {}

  /** Largest request body as sent (the HTTP adapter stops reading past it). */
  get maxBodyBytes(): number {
    return this.parts.settings.tuning.maxBodyBytes;
  }

  /**
   * Creates the queues and containers if missing, once per process. In Azure, infra/ has
   * provisioned them and this costs one request each at cold start.
   */
  ready(): Promise<void> {
    this.provisioned ??= this.parts.provision().catch((e: unknown) => {
      this.provisioned = undefined; // let the next call try again
      throw e;
    });
    return this.provisioned;
  }

  /** POST /api/batches. */
  async submit(s: Submission): Promise<IngestResult> {
    await this.ready();
    return this.parts.ingestor.ingest({
      open: bufferSource(s.body, s.gzip, this.parts.settings.tuning.maxInflatedBytes),
      format: s.format,
      ...(s.idempotencyKey !== undefined ? { idempotencyKey: s.idempotencyKey } : {}),
      source: 'http',
    });
  }

  /** GET /api/batches/{id}: undefined for a batch that was never accepted. */
  status(batchId: string): Promise<BatchStatusBody | undefined> {
    return this.parts.reader.status(batchId);
  }

  /** GET /api/batches/{id}/report. */
  report(batchId: string): Promise<ReportLookup> {
    return this.parts.reader.report(batchId);
  }

  /** The timer: re-notify batches whose events were lost, then ingest files from `incoming/`. */
  async sweep(): Promise<SweepResult> {
    await this.ready();
    return this.parts.sweeper.run();
  }

  /**
   * One WorkDetected event: drain the queue it names with the processor its role needs, or
   * join a drain of that queue already running here.
   */
  async drain(event: WorkDetected): Promise<DrainResult> {
    const { names, drains, meter, log } = this.parts;
    // Only our own queues: an event is input from the network, not an instruction to read anything.
    if (names.roleOf(event.queueName) !== event.role) throw new PermanentError(`WorkDetected names queue "${event.queueName}" with role ${event.role}, which this app does not drain`);
    await this.ready();
    const before = meter.snapshot();
    const outcome = await drains.drain(event.queueName, event.role);
    if (outcome.kind === 'joined') return outcome;
    const used = Object.entries(meterDelta(meter.snapshot(), before));
    // Process-wide counts, so concurrent drains overlap in this figure; totals are exact in /api/health.
    log.info(`${event.queueName}: drain ended (${outcome.kind}); storage transactions meanwhile: ${used.map(([k, v]) => `${k}=${v}`).join(' ') || 'none'}`);
    return outcome;
  }

  /** Moves poison messages back after a fix (CLI `redrive`, and the admin route). */
  async redrive(request: RedriveRequest): Promise<RedriveResult> {
    await this.ready();
    return this.parts.redriver.redrive(request);
  }

  /** A scheduled per-batch check fired (queue `batch-watchdog`). */
  async watchdog(check: WatchdogCheck): Promise<WatchdogOutcome> {
    await this.ready();
    return this.parts.watchdog.check(check);
  }

  /**
   * A message from a backlog queue of the secondary namespace: restore it to its destination on
   * the primary. Returns when the primary accepted it (or it was malformed and set aside under
   * `rejected/backlog/`); throws, after a back-off, while the primary does not take it.
   */
  async syphon(delivery: BacklogDelivery): Promise<SyphonOutcome> {
    const { syphon } = this.parts;
    if (!syphon) throw new PermanentError('ServiceBusSecondaryConnection is not configured: there is no backlog to syphon');
    await this.ready();
    return syphon.restore(delivery);
  }

  /** ok, or (with a secondary namespace) degraded / red with the publisher's per-entity state; makes no request. */
  health(): { status: PublisherHealth['status']; serviceBus?: PublisherHealth } {
    const publisher = this.parts.notifier.health();
    return publisher ? { status: publisher.status, serviceBus: publisher } : { status: 'ok' };
  }

  /** This process's Storage requests by operation; makes no request itself. */
  storageTransactions(): MeterSnapshot {
    return this.parts.meter.snapshot();
  }

  /** Drain invocations in progress in this process (tests assert none is left behind). */
  get drainsInProgress(): number {
    return this.parts.drains.inProgress;
  }

  /** Graceful stop: drains finish their current batch, then publish a continuation for the rest. */
  beginShutdown(): void {
    this.parts.drains.beginShutdown();
  }

  async close(): Promise<void> {
    await this.parts.notifier.close();
    await this.parts.syphon?.close(); // its primary channel is the publisher's, unless a test gave its own publisher
  }
}
