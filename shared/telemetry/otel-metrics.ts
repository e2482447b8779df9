/**
 * The `pushdrain.*` instruments, with units (UCUM; `{…}` annotations count things). Attributes
 * stay low-cardinality: a queue, a stage, an operation, a state, an outcome, never a batch id or
 * a URL. Gauges report what was last seen; the app pushes those values as it sees them, and the
 * reader collects them.
 */
import type { Attributes as OtelAttributes, Counter, Histogram, Meter } from '@opentelemetry/api';

import type { PipelineMetrics } from './telemetry';

interface Instrument {
  name: string;
  unit: string;
  kind: 'counter' | 'histogram' | 'gauge';
  description: string;
}

/** Every instrument: the one place its name, unit, kind and meaning are written. */
export const INSTRUMENTS = {
  batchesAccepted: {
    name: 'pushdrain.batches.accepted',
    unit: '{batch}',
    kind: 'counter',
    description: 'Batches accepted (answered 202, or ingested from incoming/).',
  },
  transactionsAccepted: {
    name: 'pushdrain.transactions.accepted',
    unit: '{transaction}',
    kind: 'counter',
    description: 'Transactions in accepted batches.',
  },
  batchesCompleted: {
    name: 'pushdrain.batches.completed',
    unit: '{batch}',
    kind: 'counter',
    description: 'Batches whose report was written.',
  },
  batchesFailed: {
    name: 'pushdrain.batches.failed',
    unit: '{batch}',
    kind: 'counter',
    description: 'Batches settled with at least one poisoned chunk.',
  },
  batchesStalled: {
    name: 'pushdrain.batches.stalled',
    unit: '{batch}',
    kind: 'counter',
    description: 'Watchdog checks that found a batch without progress and acted on it.',
  },
  batchDuration: {
    name: 'pushdrain.batch.duration',
    unit: 's',
    kind: 'histogram',
    description: 'From submission to the report (or to failure).',
  },
  transactionsBilled: {
    name: 'pushdrain.transactions.billed',
    unit: '{transaction}',
    kind: 'counter',
    description: 'Transactions billed by the map step (a redelivered chunk counts again).',
  },
  storageTransactions: {
    name: 'pushdrain.storage.transactions',
    unit: '{request}',
    kind: 'counter',
    description: 'Storage requests by operation (the storage-transaction meter).',
  },
  queueDepth: {
    name: 'pushdrain.queue.depth',
    unit: '{message}',
    kind: 'gauge',
    description: 'Approximate queue depth, as last seen by this instance.',
  },
  poisonMoves: {
    name: 'pushdrain.poison.moves',
    unit: '{message}',
    kind: 'counter',
    description: 'Queue messages moved to the poison queue.',
  },
  deadLetters: {
    name: 'pushdrain.dead_letters',
    unit: '{message}',
    kind: 'gauge',
    description: 'Service Bus dead letters at the last count.',
  },
  drainsInProgress: {
    name: 'pushdrain.drains.in_progress',
    unit: '{drain}',
    kind: 'gauge',
    description: 'Drain invocations running in this instance.',
  },
  fanOutEvents: {
    name: 'pushdrain.fan_out.events',
    unit: '{event}',
    kind: 'counter',
    description: 'Fan-out events published for deep queues.',
  },
  webhookDeliveries: {
    name: 'pushdrain.webhook.deliveries',
    unit: '{delivery}',
    kind: 'counter',
    description: 'Batch-event delivery attempts recorded, by outcome and target kind (webhook, callback, topic).',
  },
  drainDuplicates: {
    name: 'pushdrain.drain.duplicates',
    unit: '{message}',
    kind: 'counter',
    description: 'Messages processed while another delivery had them too (work done twice), by stage.',
  },
  drainLeasesLost: {
    name: 'pushdrain.drain.leases_lost',
    unit: '{lease}',
    kind: 'counter',
    description: 'Drain rounds whose slot lease was lost to another drain, by stage.',
  },
} as const satisfies Record<string, Instrument>;

type Name = keyof typeof INSTRUMENTS;
type OfKind<K extends Instrument['kind']> = {
  [N in Name]: (typeof INSTRUMENTS)[N]['kind'] extends K ? N : never;
}[Name];

/** Every instrument's name, for the docs, the alerts in infra/ and the tests. */
export const METRICS = Object.fromEntries(Object.entries(INSTRUMENTS).map(([k, i]) => [k, i.name])) as {
  [N in Name]: (typeof INSTRUMENTS)[N]['name'];
};

const DURATION_BOUNDARIES = [0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

export class OtelMetrics implements PipelineMetrics {
  private readonly counters: Record<OfKind<'counter'>, Counter>;
  private readonly duration: Histogram;
  private readonly depths = new Map<string, number>();
  private deadLetterCount: number | undefined;
  private drains = 0;
  /** Attribute objects made once per value (the storage meter counts every request). */
  private readonly attrs = new Map<string, OtelAttributes>();

  constructor(meter: Meter) {
    const options = (i: Instrument): { unit: string; description: string } => ({
      unit: i.unit,
      description: i.description,
    });
    const counters: Partial<Record<OfKind<'counter'>, Counter>> = {};
    for (const [key, i] of Object.entries(INSTRUMENTS) as [Name, Instrument][])
      if (i.kind === 'counter') counters[key as OfKind<'counter'>] = meter.createCounter(i.name, options(i));
    this.counters = counters as Record<OfKind<'counter'>, Counter>;
    this.duration = meter.createHistogram(INSTRUMENTS.batchDuration.name, {
      ...options(INSTRUMENTS.batchDuration),
      advice: { explicitBucketBoundaries: DURATION_BOUNDARIES },
    });
    const gauges: Record<OfKind<'gauge'>, (observe: (value: number, attributes?: OtelAttributes) => void) => void> = {
      queueDepth: (observe) => {
        for (const [queue, depth] of this.depths) observe(depth, { queue });
      },
      deadLetters: (observe) => {
        if (this.deadLetterCount !== undefined) observe(this.deadLetterCount);
      },
      drainsInProgress: (observe) => observe(this.drains),
    };
    for (const [key, collect] of Object.entries(gauges) as [OfKind<'gauge'>, (typeof gauges)[OfKind<'gauge'>]][])
      meter
        .createObservableGauge(INSTRUMENTS[key].name, options(INSTRUMENTS[key]))
        .addCallback((r) => collect((value, attributes) => r.observe(value, attributes)));
  }

  batchAccepted(source: string, transactions: number): void {
    const attributes = this.attributes('source', source);
    this.counters.batchesAccepted.add(1, attributes);
    this.counters.transactionsAccepted.add(transactions, attributes);
  }

  batchSettled(state: 'completed' | 'failed', ms: number): void {
    this.counters[state === 'completed' ? 'batchesCompleted' : 'batchesFailed'].add(1);
    this.duration.record(ms / 1000, this.attributes('state', state));
  }

  billed(transactions: number): void {
    this.counters.transactionsBilled.add(transactions);
  }

  storage(operation: string, count: number): void {
    this.counters.storageTransactions.add(count, this.attributes('operation', operation));
  }

  queueDepth(queue: string, depth: number): void {
    this.depths.set(queue, depth);
  }

  poisoned(stage: string): void {
    this.counters.poisonMoves.add(1, this.attributes('stage', stage));
  }

  deadLetters(count: number): void {
    this.deadLetterCount = count;
  }

  drainsInProgress(count: number): void {
    this.drains = count;
  }

  fanOut(events: number): void {
    this.counters.fanOutEvents.add(events);
  }

  stalled(action: string): void {
    this.counters.batchesStalled.add(1, this.attributes('action', action));
  }

  delivery(outcome: string, targetKind: string): void {
    this.counters.webhookDeliveries.add(1, { outcome, target_kind: targetKind });
  }

  drainDuplicates(stage: string, count: number): void {
    this.counters.drainDuplicates.add(count, this.attributes('stage', stage));
  }

  leaseLost(stage: string): void {
    this.counters.drainLeasesLost.add(1, this.attributes('stage', stage));
  }

  /** `{ [key]: value }`, the same object every time (the values are few: see the file's comment). */
  private attributes(key: string, value: string): OtelAttributes {
    const id = `${key}\0${value}`;
    let a = this.attrs.get(id);
    if (!a) this.attrs.set(id, (a = { [key]: value }));
    return a;
  }
}
