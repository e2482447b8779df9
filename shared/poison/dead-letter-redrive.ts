/**
 * Redrive of Service Bus dead letters: WorkDetected events of the subscriptions go back to the
 * topic (every subscription whose filter matches gets a copy: a wake-up hint more, which costs a
 * probe of an empty queue at worst), watchdog checks back to `batch-watchdog` (due now: their
 * time has passed). The Storage work they point at never left Storage, so nothing is reopened.
 */
import { ValidationError } from '../errors';
import type { DeadLetterQueues, KeptDeadLetter } from '../notify/dead-letters';
import type { Logger } from '../ports';

export interface DeadLetterRedriveRequest {
  /** Only this entity, as the status report names it (`work-detected/Subscriptions/drain`, `batch-watchdog`). */
  entity?: string;
  /** Stop after moving this many, over all entities. @defaultValue 1000 */
  max?: number;
}

export interface DeadLetterRedriveResult {
  /** Tells this answer apart from a poison redrive's. */
  deadLetters: true;
  moved: number;
  /** Moved per entity (every entity looked at, 0 included). */
  byEntity: Record<string, number>;
  /** Dead letters left where they are, with why (a body the app could not use). */
  kept: KeptDeadLetter[];
  /** Entities that failed part-way, with the error; what moved before stays moved. */
  failed: Record<string, string>;
}

const DEFAULT_MAX = 1000;
export const MAX_LIMIT = 100_000;

export function validateMax(max: number | undefined): number {
  const m = max ?? DEFAULT_MAX;
  if (!Number.isInteger(m) || m < 1 || m > MAX_LIMIT)
    throw new ValidationError(`max must be a whole number from 1 to ${MAX_LIMIT}`, { code: 'invalid_request' });
  return m;
}

export async function redriveDeadLetters(
  queues: DeadLetterQueues | undefined,
  req: DeadLetterRedriveRequest,
  log: Logger,
): Promise<DeadLetterRedriveResult> {
  if (!queues)
    throw new ValidationError(
      'ServiceBusConnection is not configured for this app: there are no dead letters to redrive',
      { code: 'invalid_request' },
    );
  const names = queues.sources.map((s) => s.entity);
  if (req.entity !== undefined && !names.includes(req.entity))
    throw new ValidationError(`entity must be one of ${names.join(', ')}`, { code: 'invalid_request' });
  const max = validateMax(req.max);
  const result: DeadLetterRedriveResult = { deadLetters: true, moved: 0, byEntity: {}, kept: [], failed: {} };
  // One entity after the other: `max` bounds the whole run.
  for (const source of queues.sources.filter((s) => req.entity === undefined || s.entity === req.entity)) {
    if (result.moved >= max) break;
    const outcome = await queues.resubmit(source, max - result.moved);
    result.moved += outcome.moved;
    result.byEntity[source.entity] = outcome.moved;
    result.kept.push(...outcome.kept);
    if (outcome.error !== undefined) result.failed[source.entity] = outcome.error;
  }
  const failed = Object.keys(result.failed);
  log.warn(
    `redrive: ${result.moved} dead letter(s) resubmitted (${JSON.stringify(result.byEntity)}), ${result.kept.length} kept as unreadable${failed.length ? `, failed: ${failed.join(', ')}` : ''}`,
  );
  return result;
}
