/**
 * The application façade: the one object every adapter talks to (function triggers, the
 * local host, the CLI). Each method is one use case; it hands over to the pipeline step that
 * owns the work. It never creates a queue or container: infra/ provisions them in Azure, and the
 * local stack (tools/devstack/provision-storage.ts) before it serves. Built by create-app.ts.
 */
import type { Access } from './auth/access';
import type { Principal, Recipient, Role, Submitter } from './auth/principal';
import type { BatchPage, BatchPageQuery, BatchPages } from './batch/batch-pages';
import type { BatchReader, ReportLookup } from './batch/batch-reader';
import type { BatchStatus } from './batch/batch-status';
import type { ManifestStore } from './batch/manifest-store';
import type { ProgressRecorder } from './batch/progress';
import type { BatchTimelineBody } from './batch/timeline-view';
import type { Settings } from './config/settings';
import type { UsageLedger } from './cost/usage-ledger';
import type { ContinuationCounts, Continuations } from './drain/continuations';
import type { DrainActivity, DrainCoordinator } from './drain/coordinator';
import type { DrainResult } from './drain/queue-worker';
import { AbortedError, PermanentError } from './errors';
import { checkCallbackUrl } from './events/callback-policy';
import { CallbackSigner, type PublishedKey } from './events/callback-signer';
import type { DeliveryOutcome, EventDelivery } from './events/event-delivery';
import type { TestEventResult, TestEvents } from './events/test-event';
import { bufferSource } from './ingest/body';
import type { Ingestor, IngestResult } from './ingest/ingest';
import type { BodyFormat } from './ingest/records';
import { type EntityNames, ROLE_OF } from './names';
import type { BacklogDelivery } from './notify/backlog-message';
import type { DeadLetterQueues } from './notify/dead-letters';
import type { DeliveryRetryMessage } from './notify/delivery-retry-message';
import type { Notifier, WatchdogCheck, WorkDetected } from './notify/events';
import type { PublisherHealth } from './notify/failover-state';
import type { BusInspector } from './notify/inspection';
import type { Syphon, SyphonOutcome } from './notify/syphon';
import type { Finalizer } from './pipeline/finalize';
import type { MapProcessor } from './pipeline/map-processor';
import type { ReduceProcessor } from './pipeline/reduce-processor';
import type { DeadLetterRedriveRequest, DeadLetterRedriveResult } from './poison/dead-letter-redrive';
import type { Redriver, RedriveRequest, RedriveResult } from './poison/redrive';
import type { BlobStore, Clock, Logger, QueueStore } from './ports';
import type { ScaleAgent, ScaleHealth, ScaleOutcome, ScaleSignal } from './scale/agent';
import type { Activity } from './status/activity';
import type { AppObserver } from './status/app-observer';
import { buildDashboardPage, type DashboardPage } from './status/dashboard-page';
import type { DeadLetterHealth, DeadLetterTally } from './status/dead-letter-tally';
import type { StatusReport, StatusReporter } from './status/status-report';
import { meterDelta, type MeterSnapshot, type StorageMeter } from './storage/meter';
import type { MissingEntities } from './storage/missing-entities';
import type { Sweeper, SweepResult } from './sweep/incoming-sweep';
import type { Telemetry } from './telemetry/telemetry';
import { type UseCaseName, UseCaseRunner } from './use-cases';
import type { Watchdog, WatchdogOutcome } from './watchdog/check-batch';
import type { Recovery, RecoveryAction } from './watchdog/recovery';

/**
 * Everything the composition root built. The façade keeps them private; a test or the bench that
 * drives one step itself composes its own (composeApp) and keeps the parts it built.
 */
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
}

/** GET /api/health: this process's view, from memory (no Storage request). */
export interface HealthState {
  /** The worst of the parts (see PushdrainApp.health); the app still takes and processes work. */
  status: 'ok' | 'degraded' | 'red';
  drains: DrainActivity;
  /** Continuations this process scheduled, coalesced and cancelled (see drain/continuations.ts). */
  continuations: ContinuationCounts;
  scaleAgent: ScaleHealth;
  /** Failover state per entity; only with a secondary namespace. */
  serviceBus?: PublisherHealth;
  /** Service Bus dead letters as last counted (see status/dead-letter-tally.ts); only with Service Bus. */
  deadLetters?: DeadLetterHealth;
  /** POST /api/batches in progress here, and how many were stopped because the client went away. */
  ingests: { inProgress: number; aborted: number };
  /** Parts the host runs for the app that are down and being restarted (npm start's embedded Azurite). */
  down?: string[];
  /** Queues and containers Storage said do not exist (`queue work-0`): infra/ provisions them; degraded. */
  notProvisioned?: string[];
}

/** A batch as an HTTP request carries it. */
export interface Submission {
  body: Buffer;
  format: BodyFormat;
  gzip: boolean;
  idempotencyKey?: string;
  /** The `Callback-Url` header: checked against PUSHDRAIN_CALLBACK_ORIGINS before anything is written. */
  callbackUrl?: string;
  /** Fires when the client disconnects (the local host gives one; Azure's Node.js worker does not). */
  signal?: AbortSignal;
  /** The W3C trace context the batch's trace continues (the client's `traceparent`, or the host's invocation). */
  traceparent?: string;
  /** The token holder submitting it (none for a function-key holder): recorded, and scopes the Idempotency-Key. */
  submitter?: Submitter;
  /** Whom the batch's events belong to (its callback names it in what is signed). */
  recipient?: Recipient;
}

export class PushdrainApp {
  private page: DashboardPage | undefined;
  private readonly ingests = { inProgress: 0, aborted: 0 };
  private readonly down = new Set<string>();
  // The parts are reachable only through a use case (use-cases.ts), which applies what it needs first.
  readonly #use: UseCaseRunner<AppParts>;
  /** For checks of a request before its use case runs (settings only: no part does any work). */
  readonly #settings: Settings;

  constructor(parts: AppParts) {
    this.#use = new UseCaseRunner(parts, parts.observer);
    this.#settings = parts.settings;
  }

  /** Largest request body as sent (the HTTP adapter stops reading past it). */
  get maxBodyBytes(): number {
    return this.#settings.tuning.maxBodyBytes;
  }

  /** POST /api/batches. */
  async submit(s: Submission): Promise<IngestResult> {
    // A refused callback is a 400 before anything is written.
    const callbackUrl =
      s.callbackUrl !== undefined ? checkCallbackUrl(s.callbackUrl, this.#settings.events.callbackOrigins) : undefined;
    this.ingests.inProgress++;
    try {
      return await this.#use.run('submit', async (p) => {
        const result = await p.usage.run(undefined, undefined, () =>
          p.ingestor.ingest({
            open: bufferSource(s.body, s.gzip, p.settings.tuning.maxInflatedBytes, s.signal),
            format: s.format,
            ...(s.idempotencyKey !== undefined ? { idempotencyKey: s.idempotencyKey } : {}),
            ...(callbackUrl !== undefined ? { callbackUrl } : {}),
            ...(s.signal ? { signal: s.signal } : {}),
            ...(s.traceparent ? { traceparent: s.traceparent } : {}),
            ...(s.submitter ? { submitter: s.submitter } : {}),
            ...(s.recipient ? { recipient: s.recipient } : {}),
            source: 'http',
          }),
        );
        if (!result.replayed) p.observer.accepted('http', result.transactions);
        return result;
      });
    } catch (e) {
      if (e instanceof AbortedError) this.ingests.aborted++;
      throw e;
    } finally {
      this.ingests.inProgress--;
    }
  }

  /**
   * Every HTTP route that returns or changes data asks this first, before any other work: the
   * caller, if it holds one of `anyOf`; otherwise an AccessError (401 or 403).
   */
  authorize(authorization: string | null | undefined, anyOf: readonly Role[]): Promise<Principal> {
    return this.#use.local('authorize', (p) => p.access.authorize(authorization, anyOf));
  }

  /**
   * GET /api/batches/{id}: undefined for a batch that was never accepted, and for one `viewer` may
   * not see (another submitter's: the same answer as a missing one).
   */
  status(batchId: string, viewer?: Principal): Promise<BatchStatus | undefined> {
    return this.#use.run('status', (p) => p.reader.status(batchId, viewer));
  }

  /** GET /api/batches/{id}/timeline: undefined exactly when status() is (never accepted, or not `viewer`'s to see). */
  timeline(batchId: string, viewer?: Principal): Promise<BatchTimelineBody | undefined> {
    return this.#use.run('timeline', (p) => p.reader.timeline(batchId, viewer));
  }

  /** GET /api/batches/{id}/report; `not_found` for a batch `viewer` may not see. */
  report(batchId: string, viewer?: Principal): Promise<ReportLookup> {
    return this.#use.run('report', (p) => p.reader.report(batchId, viewer));
  }

  /** GET /api/batches: the newest batches `viewer` may see (its own, or all for a reader), a page at a time. */
  batchPage(viewer: Principal, query: BatchPageQuery): Promise<BatchPage> {
    return this.#use.run('batchPage', (p) => p.batchPages.page(viewer, query));
  }

  /** The timer: re-notify batches whose events were lost, then ingest files from `incoming/`. */
  sweep(): Promise<SweepResult> {
    return this.#use.run('sweep', async (p) => {
      // Each batch it ingests is a unit of its own (ingest.ts): a root scope for them to be charged in.
      const result = await p.usage.run(undefined, undefined, () => p.sweeper.run());
      // A run that found nothing is what idling costs (its two listings); one that found work is work.
      if (result.files.length > 0 || result.recovered.length > 0) p.observer.worked();
      for (const f of result.files)
        if (f.kind === 'ingested' && !f.result.replayed) p.observer.accepted('sweep', f.result.transactions);
      return result;
    });
  }

  /** GET /api/ops/status: queues, poison, Service Bus, drains, batches, the meter and its history. */
  statusReport(): Promise<StatusReport> {
    return this.#use.run('statusReport', (p) => p.status.report());
  }

  /** GET /api/dashboard: the page shell, built once per process; makes no request. */
  dashboardPage(): DashboardPage {
    this.page ??= buildDashboardPage(undefined, this.#settings.auth.signIn);
    return this.page;
  }

  /**
   * One WorkDetected event: drain the queue it names with the processor of its stage, or
   * join a drain of that queue already running here. The event's wire role must be the one
   * ROLE_OF gives the queue's stage.
   */
  drain(event: WorkDetected): Promise<DrainResult> {
    // The invocation's receives, deletes and leases are its batches' (usage-scope.ts), as is taking its event.
    return this.#use.run('drain', (p) =>
      p.usage.run(event.batchId, undefined, async () => {
        p.usage.countServiceBus(RECEIVE_AND_COMPLETE);
        const outcome = await drainEvent(p, event);
        // A drain that ran has wound down: what it used for its last batch is written now, not after a wait.
        if (outcome.kind === 'drained') await p.usage.flushCurrent();
        return outcome;
      }),
    );
  }

  /**
   * Recovery at start-up (`npm start` after a crash): repairs, at once, every open batch that
   * last moved before `leftBefore` (the caller's word that its process is gone), and any past
   * the stall threshold; healthy batches are left alone. Reports what was queued.
   */
  recover(
    options: { leftBefore?: number } = {},
  ): Promise<{ actions: RecoveryAction[]; queued: Record<string, number> }> {
    return this.#use.run('recover', async ({ names, queues, recovery, settings }) => {
      const actions = await recovery.run({ stallMs: settings.tuning.stallSeconds * 1000, ...options });
      const queued: Record<string, number> = {};
      for (const q of names.allQueues()) {
        const depth = await queues.depth(q);
        if (depth > 0) queued[q] = depth;
      }
      return { actions, queued };
    });
  }

  /** Moves poison messages back after a fix (CLI `redrive`, and the admin route). */
  redrive(request: RedriveRequest): Promise<RedriveResult> {
    return this.#use.run('redrive', (p) => p.redriver.redrive(request));
  }

  /**
   * Resubmits Service Bus dead letters to their entities (CLI `redrive --dead-letters`, the admin
   * route with `deadLetters: true`), then recounts them, so health reflects the redrive at once.
   */
  redriveDeadLetters(request: DeadLetterRedriveRequest): Promise<DeadLetterRedriveResult> {
    return this.#use.run('redriveDeadLetters', async (p) => {
      const result = await p.redriver.deadLetters(request);
      await p.deadLetterTally?.refresh();
      return result;
    });
  }

  /**
   * POST /api/ops/webhooks/test: one signed test event to each PUSHDRAIN_WEBHOOK_URL, answered per
   * target. A probe: no Storage request, nothing recorded or retried.
   */
  sendTestEvent(): Promise<TestEventResult> {
    return this.#use.local('sendTestEvent', (p) => p.testEvents.send());
  }

  /** A batch's scheduled watchdog check fired (queue `batch-watchdog`). */
  watchdog(check: WatchdogCheck): Promise<WatchdogOutcome> {
    return this.#use.run('watchdog', (p) => p.watchdog.check(check));
  }

  /** A batch event delivery's scheduled retry fired (queue `batch-watchdog`): attempted in this invocation. */
  retryDelivery(message: DeliveryRetryMessage): Promise<DeliveryOutcome> {
    return this.#use.run('retryDelivery', (p) => p.events.retry(message));
  }

  /** A signal on the `scale` subscription: the scaling agent decides (at most once per interval). */
  async scale(signal: ScaleSignal): Promise<ScaleOutcome> {
    if (this.#settings.scale.mode === 'off') return { kind: 'off' };
    const batchId = signal.kind === 'work' ? signal.batchId : undefined;
    return this.#use.run('scale', (p) =>
      // Its reads ride along with the batch's next write: a write of their own would cost more than they do.
      p.usage.run(
        batchId,
        undefined,
        () => {
          p.usage.countServiceBus(RECEIVE_AND_COMPLETE);
          return p.scaleAgent.handle(signal);
        },
        true,
      ),
    );
  }

  /** Writes every batch's usage still waiting for its manifest write now (the bench, before it reads them). */
  flushUsage(): Promise<void> {
    return this.#use.run('flushUsage', (p) => p.usage.flushAll());
  }

  /**
   * A message from a backlog queue of the secondary namespace: restore it to its destination on
   * the primary. Returns when the primary accepted it (or it was malformed and set aside under
   * `rejected/backlog/`); throws, after a back-off, while the primary does not take it.
   */
  syphon(delivery: BacklogDelivery): Promise<SyphonOutcome> {
    return this.#use.run('syphon', (p) => {
      if (!p.syphon)
        throw new PermanentError('ServiceBusSecondaryConnection is not configured: there is no backlog to syphon');
      return p.syphon.restore(delivery);
    });
  }

  /**
   * This process's health, from memory; makes no request itself. The worst part decides: a red
   * publisher (a permanent Service Bus failure) is red; a failed-over entity, a scaling agent
   * disabled by a 403, a dead letter at the last count, or a queue or container Storage said does
   * not exist is degraded. The app still takes and processes work in both.
   */
  health(): HealthState {
    return this.#use.local('health', (p) => {
      const scaleAgent = p.scaleAgent.health();
      const serviceBus = p.notifier.health();
      const deadLetters = p.deadLetterTally?.snapshot();
      const notProvisioned = p.missing.snapshot();
      const rank = { ok: 0, degraded: 1, red: 2 } as const;
      const parts: HealthState['status'][] = [
        serviceBus?.status ?? 'ok',
        scaleAgent.status === 'red' ? 'degraded' : 'ok',
        (deadLetters?.total ?? 0) > 0 ? 'degraded' : 'ok',
        notProvisioned.length > 0 ? 'degraded' : 'ok',
        this.down.size > 0 ? 'red' : 'ok',
      ];
      const status = parts.reduce((worst, x) => (rank[x] > rank[worst] ? x : worst), 'ok');
      return {
        status,
        drains: p.drains.activity(),
        continuations: p.continuations.snapshot(),
        scaleAgent,
        ...(serviceBus ? { serviceBus } : {}),
        ...(deadLetters ? { deadLetters } : {}),
        ingests: { ...this.ingests },
        ...(this.down.size > 0 ? { down: [...this.down] } : {}),
        ...(notProvisioned.length > 0 ? { notProvisioned } : {}),
      };
    });
  }

  /**
   * The host says a part it runs for the app is down (true) or back (false): the local stack's
   * supervisor restarting its embedded Azurite. Health is red meanwhile; requests fail as they would.
   */
  partDown(part: string, down: boolean): void {
    if (down) this.down.add(part);
    else this.down.delete(part);
  }

  /**
   * GET /api/health: health(), and a recount of the dead letters in the background when the
   * counts are older than a few minutes (the next answer shows it). Never waits for Service Bus.
   */
  healthProbe(): HealthState {
    this.#use.local('healthProbe', (p) => p.deadLetterTally?.refreshIfStale());
    return this.health();
  }

  /**
   * GET /api/events/keys: the public keys a client verifies its callbacks with (`v1a`, ed25519), as
   * a JWKS with Standard Webhooks' `whpk_` form beside each. From settings: no Storage request.
   */
  eventKeys(): { keys: PublishedKey[] } {
    return new CallbackSigner(this.#settings.events.callbackKeys).published();
  }

  /** This process's Storage requests by operation; makes no request itself. */
  storageTransactions(): MeterSnapshot {
    return this.#use.local('storageTransactions', (p) => p.meter.snapshot());
  }

  /** Drain invocations in progress in this process (tests assert none is left behind). */
  get drainsInProgress(): number {
    return this.#use.local('drainsInProgress', (p) => p.drains.inProgress);
  }

  /** Graceful stop: drains finish their current batch, then publish a continuation for the rest. */
  beginShutdown(): void {
    this.#use.local('beginShutdown', (p) => p.drains.beginShutdown());
  }

  /**
   * Before the process goes (a scale-in): cancels the scheduled continuations of queues that are
   * empty now, so they wake nobody for nothing; close() does it too. Never throws.
   */
  settleContinuations(): Promise<void> {
    return this.#use.local('settleContinuations', (p) => p.continuations.settle());
  }

  close(): Promise<void> {
    return this.#use.local('close', async (p) => {
      await p.events.idle(); // attempts in flight record their outcome before the clients go
      await p.usage.flushAll(); // usage still waiting for its manifest write goes now, not never
      p.usage.close();
      await p.continuations.settle();
      await p.deadLetterTally?.close();
      await p.inspector?.close();
      await p.deadLetters?.close();
      await p.notifier.close();
      await p.syphon?.close(); // its primary channel is the publisher's, unless a test gave its own publisher
    });
  }

  /** Where telemetry goes (`npm start` prints it), or "telemetry off". */
  get telemetryDestination(): string {
    return this.#use.local('telemetryDestination', (p) => p.telemetry.destination);
  }
}

/** Every public member of the façade is a use case with its needs in USE_CASES, and every use case is a member. */
type Unlisted = Exclude<keyof PushdrainApp, UseCaseName>;
type Missing = Exclude<UseCaseName, keyof PushdrainApp>;
const _facadeIsUseCases: [Unlisted, Missing] extends [never, never] ? true : never = true;

/** Service Bus operations of an event a trigger ran for: its receive and its completion. */
const RECEIVE_AND_COMPLETE = 2;

/** The drain use case: the event's queue must be ours, with the role its stage gives. */
async function drainEvent(p: AppParts, event: WorkDetected): Promise<DrainResult> {
  const { names, drains, meter, log } = p;
  // Only our own queues: an event is input from the network, not an instruction to read anything.
  const stage = names.stageOf(event.queueName);
  if (!stage || ROLE_OF[stage] !== event.role)
    throw new PermanentError(
      `WorkDetected names queue "${event.queueName}" with role ${event.role}, which this app does not drain`,
    );
  const before = meter.snapshot();
  // The invocation's own span; each batch it serves is linked as the map/reduce spans start.
  const outcome = await p.telemetry.inSpan(
    'pushdrain.drain',
    {
      attributes: {
        'pushdrain.queue': event.queueName,
        'pushdrain.stage': stage,
        'pushdrain.fan_out': event.fanOut === true,
      },
    },
    (span) => {
      if (event.traceparent) span.link(event.traceparent);
      return drains.wake(event.queueName, stage, event.fanOut === true).then((o) => {
        span.set('pushdrain.outcome', o.kind);
        if (o.kind === 'drained') span.set('pushdrain.rounds', o.rounds);
        return o;
      });
    },
  );
  if (outcome.kind === 'joined' || outcome.kind === 'held' || outcome.kind === 'fan-out-idle') return outcome;
  const used = Object.entries(meterDelta(meter.snapshot(), before));
  // Process-wide counts, so concurrent drains overlap in this figure; totals are exact in /api/health.
  log.info(
    `${event.queueName}: drain ended (${outcome.kind}${outcome.kind === 'drained' ? `, ${outcome.rounds} slot rounds` : ''}); storage transactions meanwhile: ${used.map(([k, v]) => `${k}=${v}`).join(' ') || 'none'}`,
  );
  return outcome;
}
