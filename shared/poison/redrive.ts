/**
 * Redrive: after a fix, move poison messages back to the queue they came from, reopen their
 * chunks on the batch (a failed batch becomes accepted again), and wake the queues. Send
 * first, then delete: a crash in between duplicates a pointer, which processing absorbs.
 */
import type { Manifest } from '../batch/manifest';
import type { ManifestStore } from '../batch/manifest-store';
import type { OpenBatches } from '../batch/open-batches';
import { ValidationError } from '../errors';
import type { EntityNames } from '../names';
import type { DeadLetterQueues } from '../notify/dead-letters';
import type { Notifier } from '../notify/notifier';
import { type Logger, MAX_RECEIVE, type PoisonRecord, type QueueStore } from '../ports';
import {
  type DeadLetterRedriveRequest,
  type DeadLetterRedriveResult,
  MAX_LIMIT,
  redriveDeadLetters,
  validateMax,
} from './dead-letter-redrive';

export interface RedriveRequest {
  /** Source queue (e.g. `work-0`); all of the app's queues when absent. */
  queue?: string;
  /** Only messages of this batch. */
  batchId?: string;
  /** Stop after this many. @defaultValue 1000 */
  max?: number;
}

export interface RedriveResult {
  moved: number;
  /** Messages looked at and left in poison (other batches, or unreadable records). */
  skipped: number;
  byQueue: Record<string, number>;
  reopenedBatches: string[];
}

/** Long enough to move a received batch; skipped messages reappear after it. */
const VISIBILITY_SECONDS = 30;

/**
 * A redriven message starts its delivery count afresh, so its handbacks go too: kept, they would be
 * subtracted from deliveries Storage no longer counts (queue/handbacks.ts).
 */
function withoutHandbacks(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const { hb: _handbacks, ...rest } = body as Record<string, unknown>;
  return rest;
}

function parseRecord(text: string): PoisonRecord | undefined {
  try {
    const r = JSON.parse(text) as PoisonRecord;
    return typeof r.text === 'string' && typeof r.queue === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

function chunkOf(text: string): { batchId: string; chunk: number } | undefined {
  try {
    const p = JSON.parse(text) as { batchId?: unknown; chunk?: unknown };
    return typeof p.batchId === 'string' && typeof p.chunk === 'number'
      ? { batchId: p.batchId, chunk: p.chunk }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Removes the chunk from `failed`; a batch that had failed only because of it is open again. */
function reopen(m: Manifest, chunk: number): Manifest | undefined {
  if (!m.failed.some((f) => f.chunk === chunk)) return undefined;
  m.failed = m.failed.filter((f) => f.chunk !== chunk);
  if (m.state === 'failed') {
    m.state = 'accepted';
    delete m.completedAt;
    delete m.latencyMs;
    delete m.error;
    delete m.mismatches;
  }
  return m;
}

export interface RedriveDeps {
  queues: QueueStore;
  manifests: ManifestStore;
  open: OpenBatches;
  notifier: Notifier;
  names: EntityNames;
  log: Logger;
  /** Service Bus dead-letter queues; undefined without a Service Bus connection. */
  deadLetters?: DeadLetterQueues | undefined;
  /** Sends poisoned event deliveries again (queue `deliveries`; see shared/events/delivery-redrive.ts). */
  deliveries?: (req: { batchId?: string; max: number }) => Promise<{ moved: number; skipped: number }>;
}

/** The `queue` a redrive names for the event deliveries' poison queue. */
const DELIVERIES = 'deliveries';

export class Redriver {
  constructor(private readonly deps: RedriveDeps) {}

  async redrive(req: RedriveRequest = {}): Promise<RedriveResult> {
    const { queues, manifests, names, log } = this.deps;
    const all = [...names.inputQueues(), names.resultsQueue];
    if (req.queue !== undefined && !all.includes(req.queue) && req.queue !== DELIVERIES) {
      throw new ValidationError(`queue must be one of ${[...all, DELIVERIES].join(', ')}`, {
        code: 'invalid_request',
      });
    }
    const max = validateMax(req.max);
    const result: RedriveResult = { moved: 0, skipped: 0, byQueue: {}, reopenedBatches: [] };
    if (this.deps.deliveries && (req.queue === undefined || req.queue === DELIVERIES)) {
      const d = await this.deps.deliveries({ ...(req.batchId !== undefined ? { batchId: req.batchId } : {}), max });
      result.moved += d.moved;
      result.skipped += d.skipped;
      if (d.moved > 0) result.byQueue[DELIVERIES] = d.moved;
      if (req.queue === DELIVERIES) return result;
    }
    const reopened = new Set<string>();
    for (const queue of req.queue ? [req.queue] : all) {
      if (result.moved >= max) break;
      const poison = queues.queue(names.poisonQueue(queue));
      // Bounded: each round either moves or skips what it received, and skipped ones stay invisible.
      for (let round = 0; round < Math.ceil(MAX_LIMIT / MAX_RECEIVE) && result.moved < max; round++) {
        const got = await poison.receive(Math.min(MAX_RECEIVE, max - result.moved), VISIBILITY_SECONDS);
        if (got.length === 0) break;
        for (const msg of got) {
          const record = parseRecord(msg.text);
          const chunk = record ? chunkOf(record.text) : undefined;
          if (!record || (req.batchId !== undefined && chunk?.batchId !== req.batchId)) {
            result.skipped++;
            continue;
          }
          await queues.send(queue, withoutHandbacks(JSON.parse(record.text) as unknown));
          if (chunk) {
            const updated = await manifests.update(chunk.batchId, (m) => reopen(m, chunk.chunk));
            if (updated) reopened.add(chunk.batchId);
            // A failed batch that reopens is open again: back into the index recovery reads.
            if (updated?.manifest.state === 'accepted') await this.deps.open.add(chunk.batchId);
          }
          await poison.delete(msg);
          result.moved++;
          result.byQueue[queue] = (result.byQueue[queue] ?? 0) + 1;
        }
      }
    }
    await this.deps.notifier.wake(
      Object.keys(result.byQueue)
        .filter((queue) => queue !== DELIVERIES)
        .map((queue) => ({ queue })),
    );
    result.reopenedBatches = [...reopened].sort();
    log.warn(
      `redrive: ${result.moved} messages moved back (${JSON.stringify(result.byQueue)}), ${result.skipped} skipped`,
    );
    return result;
  }

  /** Resubmits Service Bus dead letters to their entities (see dead-letter-redrive.ts). */
  deadLetters(req: DeadLetterRedriveRequest = {}): Promise<DeadLetterRedriveResult> {
    return redriveDeadLetters(this.deps.deadLetters, req, this.deps.log);
  }
}
