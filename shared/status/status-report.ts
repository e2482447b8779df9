/**
 * `GET /api/ops/status`: what the system is doing, as this instance sees it. Queue depths
 * and oldest ages, poison, Service Bus counts, this instance's drains, open and recent
 * batches, event deliveries, and the Storage meter with its history. It costs about two Storage
 * requests per queue plus one listing per 5,000 batches (and for the deliveries one or two requests
 * plus a read per batch still delivering, at most 10), metered apart from the app's own (`statusMeter`),
 * so watching the system does not blur what the system costs.
 */
import type { BatchDirectory, BatchListing } from '../batch/batch-list';
import type { DrainActivity, RunningDrain } from '../drain/coordinator';
import type { EntityNames } from '../names';
import type { BusInspection, BusInspector } from '../notify/inspection';
import type { PeekedMessage, QueueStore } from '../ports';
import type { MeterSnapshot } from '../storage/meter';
import type { Activity, ActivityWindow, HistoryPoint } from './activity';
import type { DeliveriesStatus, DeliveryStatusReader } from './delivery-status';

export interface QueueLine {
  name: string;
  depth: number;
  /** Age of the oldest visible message, or null when none is visible. */
  oldestAgeSeconds: number | null;
}

interface QueueStatus extends QueueLine {
  role: 'input' | 'output';
  poison: QueueLine;
}

interface PoisonEntry {
  /** The queue the message came from. */
  queue: string;
  messageId: string;
  batchId?: string;
  chunk?: number;
  reason: string;
  at: string;
  dequeueCount: number;
}

export interface StatusReport {
  generatedAt: string;
  instance: { id: string; startedAt: string; uptimeSeconds: number };
  queues: QueueStatus[];
  /** Poison messages: the total, and up to 32 per poison queue with their reasons. */
  poison: { total: number; shown: PoisonEntry[] };
  serviceBus: BusInspection;
  /** This instance's drains (each instance answers for itself). */
  drains: {
    running: number;
    tasks: number;
    byQueue: RunningDrain[];
    /** Messages processed here while another delivery had them too (work done twice), since start. */
    duplicates: number;
    /** Drain rounds here whose slot lease was lost to another drain, since start. */
    leasesLost: number;
  };
  batches: BatchListing;
  storage: {
    /** The app's Storage requests by operation since this instance started. */
    byOperation: MeterSnapshot;
    /** Recent window: transactions per 1,000 business transactions, idle transactions per hour. */
    window: ActivityWindow;
    /** What status reports themselves have cost (not in the figures above). */
    statusRequests: MeterSnapshot;
  };
  history: { bucketSeconds: number; points: HistoryPoint[] };
  /** Batch events being delivered (pending, retrying) and `deliveries-poison` (delivery-status.ts). */
  deliveries: DeliveriesStatus;
}

export interface StatusDeps {
  /** A QueueStore on clients metered by `statusMeter`. */
  queues: QueueStore;
  names: EntityNames;
  batches: BatchDirectory;
  inspector: BusInspector | undefined;
  drains: {
    readonly inProgress: number;
    runningDrains(): RunningDrain[];
    activity(): Pick<DrainActivity, 'duplicates' | 'leasesLost'>;
  };
  activity: Activity;
  meter: { snapshot(): MeterSnapshot };
  statusMeter: { snapshot(): MeterSnapshot };
  now: () => number;
  instanceId: string;
  deliveries: DeliveryStatusReader;
}

/** Rate figures cover this much recent time. */
const WINDOW_SECONDS = 15 * 60;
const PEEK_POISON = 32;
const LIST_LIMITS = { open: 100, recent: 20 };

function parsePoison(text: string): PoisonEntry | undefined {
  try {
    const r = JSON.parse(text) as {
      queue?: unknown;
      messageId?: unknown;
      reason?: unknown;
      at?: unknown;
      dequeueCount?: unknown;
      text?: unknown;
    };
    if (typeof r.queue !== 'string' || typeof r.reason !== 'string') return undefined;
    let pointer: { batchId?: unknown; chunk?: unknown } = {};
    try {
      pointer = typeof r.text === 'string' ? (JSON.parse(r.text) as typeof pointer) : {};
    } catch {
      // an unparseable original is shown without its batch
    }
    return {
      queue: r.queue,
      messageId: typeof r.messageId === 'string' ? r.messageId : '',
      ...(typeof pointer.batchId === 'string' ? { batchId: pointer.batchId } : {}),
      ...(typeof pointer.chunk === 'number' ? { chunk: pointer.chunk } : {}),
      reason: r.reason,
      at: typeof r.at === 'string' ? r.at : '',
      dequeueCount: typeof r.dequeueCount === 'number' ? r.dequeueCount : 0,
    };
  } catch {
    return undefined;
  }
}

export class StatusReporter {
  /** Concurrent viewers share one round of requests. */
  private inflight: Promise<StatusReport> | undefined;

  constructor(private readonly deps: StatusDeps) {}

  report(): Promise<StatusReport> {
    this.inflight ??= this.build().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async build(): Promise<StatusReport> {
    const { names, inspector, drains, activity, meter, statusMeter, now, instanceId } = this.deps;
    const queueNames = [...names.inputQueues(), names.resultsQueue];
    const [lines, serviceBus, batches] = await Promise.all([
      Promise.all(queueNames.map((q) => Promise.all([this.line(q, 1), this.line(names.poisonQueue(q), PEEK_POISON)]))),
      inspector
        ? inspector.inspect()
        : Promise.resolve<BusInspection>({
            available: false,
            reason: 'ServiceBusConnection is not configured for this app',
          }),
      this.deps.batches.list(LIST_LIMITS),
    ]);
    const queues: QueueStatus[] = lines.map(([main, poison]) => ({
      ...main.line,
      role: main.line.name === names.resultsQueue ? 'output' : 'input',
      poison: poison.line,
    }));
    const shown = lines.flatMap(([, poison]) => poison.peeked.map((m) => poisonEntry(poison.line.name, m)));
    activity.depths(Object.fromEntries(queues.map((q) => [q.name, q.depth])));
    // After the listing: it names the few batches whose manifests hold an open delivery.
    const deliveries = await this.deps.deliveries.read(batches.delivering);
    const running = drains.runningDrains();
    const t = now();
    return {
      generatedAt: new Date(t).toISOString(),
      instance: {
        id: instanceId,
        startedAt: new Date(activity.startedAt).toISOString(),
        uptimeSeconds: Math.round((t - activity.startedAt) / 1000),
      },
      queues,
      poison: { total: queues.reduce((n, q) => n + q.poison.depth, 0), shown },
      serviceBus,
      drains: {
        running: drains.inProgress,
        tasks: running.reduce((n, d) => n + d.tasks, 0),
        byQueue: running,
        ...pickOverload(drains.activity()),
      },
      batches,
      storage: {
        byOperation: meter.snapshot(),
        window: activity.window(WINDOW_SECONDS),
        statusRequests: statusMeter.snapshot(),
      },
      history: { bucketSeconds: activity.bucketMs / 1000, points: activity.history() },
      deliveries,
    };
  }

  /**
   * Depth, then (only if there is something) a peek of up to `peekMax` messages: the oldest one's
   * age for the line, and for a poison queue the records shown, from the same request.
   */
  private async line(name: string, peekMax: number): Promise<{ line: QueueLine; peeked: PeekedMessage[] }> {
    const depth = await this.deps.queues.depth(name);
    if (depth === 0) return { line: { name, depth, oldestAgeSeconds: null }, peeked: [] };
    const peeked = await this.deps.queues.peek(name, peekMax);
    const oldest = peeked[0];
    return {
      line: {
        name,
        depth,
        oldestAgeSeconds: oldest ? Math.max(0, Math.round((this.deps.now() - oldest.insertedOn) / 1000)) : null,
      },
      peeked,
    };
  }
}

function poisonEntry(poisonQueue: string, m: PeekedMessage): PoisonEntry {
  return (
    parsePoison(m.text) ?? {
      queue: poisonQueue,
      messageId: m.id,
      reason: '(unreadable poison record)',
      at: new Date(m.insertedOn).toISOString(),
      dequeueCount: m.dequeueCount,
    }
  );
}

function pickOverload(a: Pick<DrainActivity, 'duplicates' | 'leasesLost'>): { duplicates: number; leasesLost: number } {
  return { duplicates: a.duplicates.map + a.duplicates.reduce, leasesLost: a.leasesLost };
}
