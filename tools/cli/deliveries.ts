/** The batch-event deliveries as `queues` and `status` print them: pending, retrying, `deliveries-poison`. */
import type { DeliveriesStatus } from '../../shared/status/delivery-status';
import { age, num, type Painter } from './output';

/** One line of counts: what is being delivered, and what `deliveries-poison` holds. */
export function deliveriesSummary(d: DeliveriesStatus, paint: Painter): string {
  const more = d.moreBatches > 0 ? ` (and ${num(d.moreBatches)} more batch(es) not read)` : '';
  const poison = d.poisoned.depth > 0 ? paint('red', num(d.poisoned.depth)) : '0';
  return `event deliveries: ${num(d.pending)} pending, ${num(d.retrying)} retrying${more}; ${d.poisoned.queue}: ${poison}${d.poisoned.depth > 0 ? ` (oldest ${age(d.poisoned.oldestAgeSeconds)})` : ''}`;
}

/** Up to `max` retrying and poisoned deliveries, each with its last status or error. */
export function deliveryLines(d: DeliveriesStatus, max = 10): string[] {
  const last = (status?: number, error?: string): string => error ?? (status !== undefined ? `HTTP ${status}` : '–');
  return [
    ...d.shown
      .filter((l) => l.state === 'retrying')
      .slice(0, max)
      .map(
        (l) =>
          `retrying: ${l.batchId} ${l.eventType} to ${l.target}: ${num(l.attempts)} attempt(s), last ${last(l.lastStatus, l.lastError)}; next at ${l.nextAttemptAt}`,
      ),
    ...d.poisoned.shown
      .slice(0, max)
      .map(
        (p) =>
          `poisoned: ${p.batchId} ${p.eventType} to ${p.target}: ${num(p.attempts)} attempt(s), last ${last(p.lastStatus, p.lastError)} (${p.at}); pushdrain redrive --queue deliveries`,
      ),
  ];
}
