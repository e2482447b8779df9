/**
 * Redrive of `deliveries-poison`: each record's delivery goes back to pending with a fresh retry
 * schedule, and is attempted at once. The batch rejoins the open-batch index first, so a crash
 * mid-redrive leaves a pending delivery that recovery finds (or a spare marker it removes).
 */
import type { ManifestStore } from '../batch/manifest-store';
import type { OpenBatches } from '../batch/open-batches';
import { type Logger, MAX_RECEIVE, type QueueStore } from '../ports';
import type { DeliveryPoisonRecord, EventDelivery } from './event-delivery';

export interface DeliveryRedriveDeps {
  queues: QueueStore;
  manifests: ManifestStore;
  open: OpenBatches;
  events: Pick<EventDelivery, 'dispatch'>;
  poisonQueue: string;
  now: () => number;
  log: Logger;
}

/** Long enough to handle a received batch; skipped records reappear after it. */
const VISIBILITY_SECONDS = 30;

function parseRecord(text: string): DeliveryPoisonRecord | undefined {
  try {
    const r = JSON.parse(text) as DeliveryPoisonRecord;
    return r.kind === 'delivery' && typeof r.batchId === 'string' && typeof r.eventId === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

export async function redriveDeliveries(
  deps: DeliveryRedriveDeps,
  req: { batchId?: string; max: number },
): Promise<{ moved: number; skipped: number }> {
  const { queues, manifests, open, events, now, log } = deps;
  const poison = queues.queue(deps.poisonQueue);
  let moved = 0;
  let skipped = 0;
  // Bounded: each round moves or skips what it received, and skipped records stay invisible meanwhile.
  for (let round = 0; round < Math.ceil(req.max / MAX_RECEIVE) + 1 && moved < req.max; round++) {
    const got = await poison.receive(Math.min(MAX_RECEIVE, req.max - moved), VISIBILITY_SECONDS);
    if (got.length === 0) break;
    for (const msg of got) {
      const r = parseRecord(msg.text);
      if (!r || (req.batchId !== undefined && r.batchId !== req.batchId)) {
        skipped++;
        continue;
      }
      await open.add(r.batchId);
      const at = new Date(now()).toISOString();
      const updated = await manifests.update(r.batchId, (m) => {
        const d = m.events?.find((e) => e.id === r.eventId)?.deliveries[r.index];
        if (d?.state !== 'poisoned') return undefined;
        d.state = 'pending';
        d.attempts = 0;
        d.dueAt = at;
        delete d.retryKey;
        return m;
      });
      if (updated) events.dispatch(updated.manifest);
      await poison.delete(msg);
      moved++;
    }
  }
  if (moved > 0 || skipped > 0)
    log.warn(`redrive: ${moved} event deliveries sent again, ${skipped} poison records skipped`);
  return { moved, skipped };
}
