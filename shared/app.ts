/**
 * The application façade: the one object every adapter talks to (function triggers, the local
 * host, the CLI). Each method is one use case in one line or a few: it hands over to the part
 * that owns the work, through UseCaseRunner (use-cases.ts). It never creates a queue or
 * container: infra/ provisions them in Azure, and the local stack
 * (tools/devstack/provision-storage.ts) before it serves. Built by create-app.ts.
 */
import type { Principal, Role } from './auth/principal';
import type { BatchPage, BatchPageQuery } from './batch/batch-pages';
import type { ReportLookup } from './batch/batch-reader';
import type { BatchStatus } from './batch/batch-status';
import type { BatchTimelineBody } from './batch/timeline-view';
import type { DeliveryRetryMessage } from './bus/delivery-retry';
import type { WatchdogCheck } from './bus/watchdog-check';
import type { WorkDetected } from './bus/work-detected';
import { type AppParts, closeParts } from './compose/app-parts';
import type { Settings } from './config/settings';
import { drainEvent } from './drain/drain-event';
import type { DrainResult } from './drain/queue-worker';
import { PermanentError } from './errors';
import { checkCallbackUrl } from './events/callback-policy';
import { CallbackSigner, type PublishedKey } from './events/callback-signer';
import type { DeliveryOutcome } from './events/event-delivery';
import type { TestEventResult } from './events/test-event';
import type { IngestResult } from './ingest/ingest';
import { ingestBytes } from './ingest/ingest-memory';
import { ingestSubmission, type Submission } from './ingest/submission';
import type { BacklogDelivery } from './notify/backlog-message';
import type { SyphonOutcome } from './notify/syphon';
import type { DeadLetterRedriveRequest, DeadLetterRedriveResult } from './poison/dead-letter-redrive';
import type { RedriveRequest, RedriveResult } from './poison/redrive';
import type { ScaleOutcome, ScaleSignal } from './scale/agent';
import { buildDashboardPage, type DashboardPage } from './status/dashboard-page';
import { type HealthState, ProcessHealth } from './status/process-health';
import type { StatusReport } from './status/status-report';
import type { MeterSnapshot } from './storage/meter';
import type { SweepResult } from './sweep/incoming-sweep';
import { type UseCaseName, UseCaseRunner } from './use-cases';
import type { WatchdogOutcome } from './watchdog/check-batch';
import type { RecoveryAction } from './watchdog/recovery';

export class PushdrainApp {
  private page: DashboardPage | undefined;
  /** Ingests in progress and parts the host reports down: what only this process knows. */
  private readonly process = new ProcessHealth();
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

  /** POST /api/batches. A refused callback is a 400 before anything is written. */
  submit(s: Submission): Promise<IngestResult> {
    const origins = this.#settings.events.callbackOrigins;
    const callbackUrl = s.callbackUrl !== undefined ? checkCallbackUrl(s.callbackUrl, origins) : undefined;
    return this.process.ingest(() => this.#use.run('submit', (p) => ingestSubmission(p, s, callbackUrl)));
  }

  /** Room in the memory budget for a POST's body of `declared` bytes, held until released; none now: undefined (a 503). */
  admitIngest(declared: number | undefined, gzip: boolean): (() => void) | undefined {
    const bytes = ingestBytes(declared, gzip, this.#settings.tuning);
    return this.#use.local('admitIngest', (p) => p.memory.tryReserve(bytes));
  }

  /** Every HTTP route that returns or changes data asks this first: the caller, if it holds one of `anyOf`; else an AccessError. */
  authorize(authorization: string | null | undefined, anyOf: readonly Role[]): Promise<Principal> {
    return this.#use.local('authorize', (p) => p.access.authorize(authorization, anyOf));
  }

  /** GET /api/batches/{id}: undefined for a batch never accepted, and for one `viewer` may not see. */
  status(batchId: string, viewer?: Principal): Promise<BatchStatus | undefined> {
    return this.#use.run('status', (p) => p.reader.status(batchId, viewer));
  }

  /** GET /api/batches/{id}/timeline: undefined exactly when status() is. */
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
    return (this.page ??= buildDashboardPage(undefined, this.#settings.auth.signIn));
  }

  /** One WorkDetected event: drain the queue it names, or join a drain of it running here (drain-event.ts). */
  drain(event: WorkDetected): Promise<DrainResult> {
    return this.#use.run('drain', (p) => drainEvent(p, event));
  }

  /**
   * Recovery at start-up (`npm start` after a crash): repairs at once every open batch that last
   * moved before `leftBefore` (its process is gone) or past the stall threshold. Reports what was queued.
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

  /** Resubmits Service Bus dead letters to their entities, then recounts them so health shows it at once. */
  redriveDeadLetters(request: DeadLetterRedriveRequest): Promise<DeadLetterRedriveResult> {
    return this.#use.run('redriveDeadLetters', async (p) => {
      const result = await p.redriver.deadLetters(request);
      await p.deadLetterTally?.refresh();
      return result;
    });
  }

  /** POST /api/ops/webhooks/test: one signed test event to each PUSHDRAIN_WEBHOOK_URL; writes nothing. */
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
    // Its reads ride along with the batch's next write: a write of their own would cost more than they do.
    return this.#use.run('scale', (p) => p.usage.runTriggered(batchId, () => p.scaleAgent.handle(signal), true));
  }

  /** Writes every batch's usage still waiting for its manifest write now (the bench, before it reads them). */
  flushUsage(): Promise<void> {
    return this.#use.run('flushUsage', (p) => p.usage.flushAll());
  }

  /** A backlog message of the secondary namespace: restored to the primary (throws, after a back-off, while refused). */
  syphon(delivery: BacklogDelivery): Promise<SyphonOutcome> {
    return this.#use.run('syphon', (p) => {
      if (!p.syphon)
        throw new PermanentError('ServiceBusSecondaryConnection is not configured: there is no backlog to syphon');
      return p.syphon.restore(delivery);
    });
  }

  /** This process's health, from memory (status/process-health.ts); the app still works when degraded or red. */
  health(): HealthState {
    return this.#use.local('health', (p) => this.process.of(p));
  }

  /** A part the host runs for the app is down (true) or back (false): npm start's supervisor restarting Azurite. */
  partDown(part: string, down: boolean): void {
    this.#use.local('partDown', () => this.process.partDown(part, down));
  }

  /** GET /api/health: health(), and a background recount of stale dead-letter counts. Never waits for Service Bus. */
  healthProbe(): HealthState {
    this.#use.local('healthProbe', (p) => p.deadLetterTally?.refreshIfStale());
    return this.health();
  }

  /** GET /api/events/keys: the callbacks' public keys as a JWKS, with the Standard Webhooks `whpk_` form. */
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

  /** Before a scale-in: cancels the continuations of queues empty now, so they wake nobody. Never throws. */
  cancelIdleContinuations(): Promise<void> {
    return this.#use.local('cancelIdleContinuations', (p) => p.continuations.cancelIdle());
  }

  close(): Promise<void> {
    return this.#use.local('close', closeParts);
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
