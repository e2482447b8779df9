/**
 * Everything the composition root built (create-app.ts), and how it closes. The façade keeps
 * them private; a test or the bench that drives one step itself composes its own (composeApp)
 * and keeps the parts it built.
 */
import type { Access } from '../auth/access';
import type { BatchPages } from '../batch/batch-pages';
import type { BatchReader } from '../batch/batch-reader';
import type { ManifestStore } from '../batch/manifest-store';
import type { ProgressRecorder } from '../batch/progress';
import type { Settings } from '../config/settings';
import type { UsageLedger } from '../cost/usage-ledger';
import type { Continuations } from '../drain/continuations';
import type { DrainCoordinator } from '../drain/coordinator';
import type { EventDelivery } from '../events/event-delivery';
import type { TestEvents } from '../events/test-event';
import type { Ingestor } from '../ingest/ingest';
import type { EntityNames } from '../names';
import type { DeadLetterQueues } from '../notify/dead-letters';
import type { BusInspector } from '../notify/inspection';
import type { Notifier } from '../notify/notifier';
import type { Syphon } from '../notify/syphon';
import type { Finalizer } from '../pipeline/finalize';
import type { MapProcessor } from '../pipeline/map-processor';
import type { ReduceProcessor } from '../pipeline/reduce-processor';
import type { Redriver } from '../poison/redrive';
import type { BlobStore, Clock, Logger, QueueStore } from '../ports';
import type { ScaleAgent } from '../scale/agent';
import type { Activity } from '../status/activity';
import type { AppObserver } from '../status/app-observer';
import type { DeadLetterTally } from '../status/dead-letter-tally';
import type { StatusReporter } from '../status/status-report';
import type { StorageMeter } from '../storage/meter';
import type { MissingEntities } from '../storage/missing-entities';
import type { Sweeper } from '../sweep/incoming-sweep';
import type { Telemetry } from '../telemetry/telemetry';
import type { MemoryBudget } from '../util/memory-budget';
import type { Watchdog } from '../watchdog/check-batch';
import type { Recovery } from '../watchdog/recovery';

export interface AppParts {
  settings: Settings;
  names: EntityNames;
  meter: StorageMeter;
  /** What each batch used and its manifest does not show yet. */
  usage: UsageLedger;
  /** Queues and containers Storage said do not exist: health is degraded while there is one. */
  missing: MissingEntities;
  clock: Clock;
  log: Logger;
  blobs: BlobStore;
  queues: QueueStore;
  manifests: ManifestStore;
  progress: ProgressRecorder;
  notifier: Notifier;
  finalizer: Finalizer;
  /** The batch events' outbox: deliveries, their retries, poison and redrive. */
  events: EventDelivery;
  ingestor: Ingestor;
  reader: BatchReader;
  /** GET /api/batches: a submitter's own batches, or every batch for a reader. */
  batchPages: BatchPages;
  sweeper: Sweeper;
  map: MapProcessor;
  reduce: ReduceProcessor;
  drains: DrainCoordinator;
  /** The continuations this process scheduled: coalesced, and cancelled once their queue is seen empty. */
  continuations: Continuations;
  redriver: Redriver;
  watchdog: Watchdog;
  recovery: Recovery;
  /** What this instance did, in time buckets (the status history). */
  activity: Activity;
  /** Feeds the status history and the metrics together (what the use cases report). */
  observer: AppObserver;
  status: StatusReporter;
  /** Service Bus counts for the status report; undefined without a Service Bus connection. */
  inspector: BusInspector | undefined;
  /** The Service Bus dead-letter queues (redrive, counts); undefined without a Service Bus connection. */
  deadLetters: DeadLetterQueues | undefined;
  /** The dead-letter counts health shows; undefined when nothing can count them. */
  deadLetterTally: DeadLetterTally | undefined;
  scaleAgent: ScaleAgent;
  /** Who may call the HTTP routes (PUSHDRAIN_AUTH). */
  access: Access;
  /** Restores backlog messages to the primary; only with a secondary namespace configured. */
  syphon: Syphon | undefined;
  /** "Send a test event" to the operator's webhooks: a probe that writes nothing. */
  testEvents: TestEvents;
  /** Spans and `pushdrain.*` metrics; NO_TELEMETRY when off. */
  telemetry: Telemetry;
  /** The batch data this process holds at once. */
  memory: MemoryBudget;
}

/** Closes the parts in the order their work needs: what is in flight records itself before its client goes. */
export async function closeParts(p: AppParts): Promise<void> {
  await p.events.idle(); // attempts in flight record their outcome before the clients go
  await p.usage.flushAll(); // usage still waiting for its manifest write goes now, not never
  p.usage.close();
  await p.continuations.cancelIdle();
  await p.deadLetterTally?.close();
  await p.inspector?.close();
  await p.deadLetters?.close();
  await p.notifier.close();
  await p.syphon?.close(); // its primary channel is the publisher's, unless a test gave its own publisher
}
