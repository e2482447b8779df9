/**
 * The drain use case: one WorkDetected event drains the queue it names with the processor of its
 * stage, or joins a drain of that queue already running here. The event is input from the
 * network: the queue must be ours, with the wire role ROLE_OF gives its stage.
 */
import type { WorkDetected } from '../bus/work-detected';
import type { UsageLedger } from '../cost/usage-ledger';
import { PermanentError } from '../errors';
import { type EntityNames, ROLE_OF } from '../names';
import type { Logger } from '../ports';
import { meterDelta, type StorageMeter } from '../storage/meter';
import type { Telemetry } from '../telemetry/telemetry';
import type { DrainCoordinator } from './coordinator';
import type { DrainResult } from './queue-worker';

/** The parts a drain invocation uses. */
interface DrainEventParts {
  names: EntityNames;
  drains: DrainCoordinator;
  meter: StorageMeter;
  usage: UsageLedger;
  log: Logger;
  telemetry: Telemetry;
}

export function drainEvent(p: DrainEventParts, event: WorkDetected): Promise<DrainResult> {
  // The invocation's receives, deletes and leases are its batches' (usage-scope.ts), as is taking its event.
  return p.usage.runTriggered(event.batchId, async () => {
    const outcome = await drainQueue(p, event);
    // A drain that ran has wound down: what it used for its last batch is written now, not after a wait.
    if (outcome.kind === 'drained') await p.usage.flushCurrent();
    return outcome;
  });
}

async function drainQueue(p: DrainEventParts, event: WorkDetected): Promise<DrainResult> {
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
