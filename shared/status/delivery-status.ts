/**
 * The status report's deliveries: events still being delivered (pending, or retrying with their last
 * status and error) and those `deliveries-poison` holds. It reads only what is stored anyway: the
 * batch listing already sees which completed or failed batches keep their open-batch marker (a
 * delivery is pending), so only those manifests are read, at most MAX_BATCHES of them, and the poison
 * queue is peeked (no receive: nothing becomes invisible, nothing is written). The report is readable
 * by `Batches.Read`, so a target shows as its origin only: a callback's path and query are the
 * client's, and a query may carry a token; an error is cut to a few words with URLs and keys masked.
 */
import type { ManifestStore } from '../batch/manifest-store';
import type { DeliveryPoisonRecord } from '../events/event-delivery';
import type { DeliveryKind } from '../events/outbox';
import type { PeekedMessage, QueueStore } from '../ports';
import { originOf, redactError } from '../redaction';

/** Manifests one status read may open for their deliveries; the rest are counted ("and N more"). */
export const MAX_BATCHES = 10;
/** Deliveries and poison records one report lists. */
const MAX_SHOWN = 25;
const PEEK_POISON = 32;

export interface DeliveryLine {
  batchId: string;
  eventId: string;
  eventType: string;
  kind: DeliveryKind;
  /** The endpoint's origin (or the topic's name). */
  target: string;
  /** pending: never attempted yet (or its first attempt is in flight); retrying: an attempt failed. */
  state: 'pending' | 'retrying';
  /** Attempts made so far. */
  attempts: number;
  nextAttemptAt: string;
  lastStatus?: number;
  lastError?: string;
}

interface PoisonedDelivery {
  batchId: string;
  eventId: string;
  eventType: string;
  kind: DeliveryKind;
  target: string;
  attempts: number;
  lastStatus?: number;
  lastError?: string;
  /** When it was poisoned. */
  at: string;
}

export interface DeliveriesStatus {
  /** Counted over the batches read (see moreBatches). */
  pending: number;
  retrying: number;
  /** Up to 25, retrying first, then by next attempt. */
  shown: DeliveryLine[];
  /** Completed or failed batches with an open delivery that this read did not open (the cap). */
  moreBatches: number;
  poisoned: { queue: string; depth: number; oldestAgeSeconds: number | null; shown: PoisonedDelivery[] };
}

export interface DeliveryStatusDeps {
  /** A ManifestStore on the status meter's clients. */
  manifests: Pick<ManifestStore, 'read'>;
  /** A QueueStore on the status meter's clients. */
  queues: Pick<QueueStore, 'depth' | 'peek'>;
  poisonQueue: string;
  now: () => number;
}

export class DeliveryStatusReader {
  constructor(private readonly deps: DeliveryStatusDeps) {}

  /** `delivering`: completed or failed batches still in the open-batch index, latest completion first. */
  async read(delivering: { batchIds: readonly string[]; total: number }): Promise<DeliveriesStatus> {
    const opened = delivering.batchIds.slice(0, MAX_BATCHES);
    const [lines, poisoned] = await Promise.all([
      Promise.all(opened.map((batchId) => this.lines(batchId))),
      this.poisoned(),
    ]);
    const all = lines.flat();
    const order = (l: DeliveryLine): string => `${l.state === 'retrying' ? 0 : 1}${l.nextAttemptAt}`;
    return {
      pending: all.filter((l) => l.state === 'pending').length,
      retrying: all.filter((l) => l.state === 'retrying').length,
      shown: all.sort((a, b) => order(a).localeCompare(order(b))).slice(0, MAX_SHOWN),
      moreBatches: Math.max(0, delivering.total - opened.length),
      poisoned,
    };
  }

  private async lines(batchId: string): Promise<DeliveryLine[]> {
    const got = await this.deps.manifests.read(batchId);
    const out: DeliveryLine[] = [];
    for (const e of got?.manifest.events ?? [])
      for (const d of e.deliveries) {
        if (d.state !== 'pending') continue;
        out.push({
          batchId,
          eventId: e.id,
          eventType: e.type,
          kind: d.kind,
          target: originOf(d.target),
          state: d.attempts > 0 ? 'retrying' : 'pending',
          attempts: d.attempts,
          nextAttemptAt: d.dueAt,
          ...(d.lastStatus !== undefined ? { lastStatus: d.lastStatus } : {}),
          ...(d.lastError !== undefined ? { lastError: redactError(d.lastError) } : {}),
        });
      }
    return out;
  }

  private async poisoned(): Promise<DeliveriesStatus['poisoned']> {
    const { queues, poisonQueue: queue, now } = this.deps;
    const depth = await queues.depth(queue);
    if (depth === 0) return { queue, depth, oldestAgeSeconds: null, shown: [] };
    const peeked = await queues.peek(queue, PEEK_POISON);
    const oldest = peeked[0];
    return {
      queue,
      depth,
      oldestAgeSeconds: oldest ? Math.max(0, Math.round((now() - oldest.insertedOn) / 1000)) : null,
      shown: peeked.flatMap((m) => poisonedDelivery(m) ?? []).slice(0, MAX_SHOWN),
    };
  }
}

/** A record as the status shows it; undefined for one that is not a delivery record. */
function poisonedDelivery(m: PeekedMessage): PoisonedDelivery | undefined {
  let r: Partial<DeliveryPoisonRecord>;
  try {
    r = JSON.parse(m.text) as Partial<DeliveryPoisonRecord>;
  } catch {
    return undefined;
  }
  if (r.kind !== 'delivery' || typeof r.batchId !== 'string' || typeof r.eventId !== 'string') return undefined;
  return {
    batchId: r.batchId,
    eventId: r.eventId,
    eventType: typeof r.type === 'string' ? r.type : '',
    kind: r.deliveryKind ?? 'webhook',
    target: originOf(typeof r.target === 'string' ? r.target : ''),
    attempts: typeof r.attempts === 'number' ? r.attempts : 0,
    ...(typeof r.lastStatus === 'number' ? { lastStatus: r.lastStatus } : {}),
    ...(typeof r.lastError === 'string' ? { lastError: redactError(r.lastError) } : {}),
    at: typeof r.at === 'string' ? r.at : new Date(m.insertedOn).toISOString(),
  };
}
