/**
 * The `pushdrain.*` instruments, with units (UCUM; `{…}` annotations count things). Attributes
 * stay low-cardinality: a queue, a stage, an operation, a state, never a batch id. Gauges report
 * what was last seen; the app pushes those values as it sees them, and the reader collects them.
 */
import type { Counter, Histogram, Meter } from '@opentelemetry/api';

import type { PipelineMetrics } from './telemetry';

/** Every instrument's name, for the docs, the alerts in infra/ and the tests. */
export const METRICS = {
  batchesAccepted: 'pushdrain.batches.accepted',
  batchesCompleted: 'pushdrain.batches.completed',
  batchesFailed: 'pushdrain.batches.failed',
  batchesStalled: 'pushdrain.batches.stalled',
  batchDuration: 'pushdrain.batch.duration',
  transactionsAccepted: 'pushdrain.transactions.accepted',
  transactionsBilled: 'pushdrain.transactions.billed',
  storageTransactions: 'pushdrain.storage.transactions',
  queueDepth: 'pushdrain.queue.depth',
  poisonMoves: 'pushdrain.poison.moves',
  deadLetters: 'pushdrain.dead_letters',
  drainsInProgress: 'pushdrain.drains.in_progress',
  fanOutEvents: 'pushdrain.fan_out.events',
} as const;

export class OtelMetrics implements PipelineMetrics {
  private readonly accepted: Counter;
  private readonly acceptedTransactions: Counter;
  private readonly completed: Counter;
  private readonly failed: Counter;
  private readonly stalls: Counter;
  private readonly duration: Histogram;
  private readonly billedTransactions: Counter;
  private readonly storageRequests: Counter;
  private readonly poisonMoves: Counter;
  private readonly fanOutEvents: Counter;
  private readonly depths = new Map<string, number>();
  private deadLetterCount: number | undefined;
  private drains = 0;
  /** Storage operations, each with its attribute object made once (the meter counts every request). */
  private readonly operations = new Map<string, { operation: string }>();

  constructor(meter: Meter) {
    this.accepted = meter.createCounter(METRICS.batchesAccepted, {
      unit: '{batch}',
      description: 'Batches accepted (answered 202, or ingested from incoming/).',
    });
    this.acceptedTransactions = meter.createCounter(METRICS.transactionsAccepted, {
      unit: '{transaction}',
      description: 'Transactions in accepted batches.',
    });
    this.completed = meter.createCounter(METRICS.batchesCompleted, {
      unit: '{batch}',
      description: 'Batches whose report was written.',
    });
    this.failed = meter.createCounter(METRICS.batchesFailed, {
      unit: '{batch}',
      description: 'Batches settled with at least one poisoned chunk.',
    });
    this.stalls = meter.createCounter(METRICS.batchesStalled, {
      unit: '{batch}',
      description: 'Watchdog checks that found a batch without progress and acted on it.',
    });
    this.duration = meter.createHistogram(METRICS.batchDuration, {
      unit: 's',
      description: 'From submission to the report (or to failure).',
      advice: { explicitBucketBoundaries: [0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600] },
    });
    this.billedTransactions = meter.createCounter(METRICS.transactionsBilled, {
      unit: '{transaction}',
      description: 'Transactions billed by the map step (a redelivered chunk counts again).',
    });
    this.storageRequests = meter.createCounter(METRICS.storageTransactions, {
      unit: '{request}',
      description: 'Storage requests by operation (the storage-transaction meter).',
    });
    this.poisonMoves = meter.createCounter(METRICS.poisonMoves, {
      unit: '{message}',
      description: 'Queue messages moved to the poison queue.',
    });
    this.fanOutEvents = meter.createCounter(METRICS.fanOutEvents, {
      unit: '{event}',
      description: 'Fan-out events published for deep queues.',
    });
    meter
      .createObservableGauge(METRICS.queueDepth, {
        unit: '{message}',
        description: 'Approximate queue depth, as last seen by this instance.',
      })
      .addCallback((r) => {
        for (const [queue, depth] of this.depths) r.observe(depth, { queue });
      });
    meter
      .createObservableGauge(METRICS.deadLetters, {
        unit: '{message}',
        description: 'Service Bus dead letters at the last count.',
      })
      .addCallback((r) => {
        if (this.deadLetterCount !== undefined) r.observe(this.deadLetterCount);
      });
    meter
      .createObservableGauge(METRICS.drainsInProgress, {
        unit: '{drain}',
        description: 'Drain invocations running in this instance.',
      })
      .addCallback((r) => r.observe(this.drains));
  }

  batchAccepted(source: string, transactions: number): void {
    this.accepted.add(1, { source });
    this.acceptedTransactions.add(transactions, { source });
  }

  batchSettled(state: 'completed' | 'failed', ms: number): void {
    (state === 'completed' ? this.completed : this.failed).add(1);
    this.duration.record(ms / 1000, { state });
  }

  billed(transactions: number): void {
    this.billedTransactions.add(transactions);
  }

  storage(operation: string, count: number): void {
    let attrs = this.operations.get(operation);
    if (!attrs) this.operations.set(operation, (attrs = { operation }));
    this.storageRequests.add(count, attrs);
  }

  queueDepth(queue: string, depth: number): void {
    this.depths.set(queue, depth);
  }

  poisoned(stage: string): void {
    this.poisonMoves.add(1, { stage });
  }

  deadLetters(count: number): void {
    this.deadLetterCount = count;
  }

  drainsInProgress(count: number): void {
    this.drains = count;
  }

  fanOut(events: number): void {
    this.fanOutEvents.add(events);
  }

  stalled(action: string): void {
    this.stalls.add(1, { action });
  }
}
