/** Putting things right: recovery of open batches, the timer's sweep, and redrive of poison and dead letters. */
import { redriveDeliveries } from '../events/delivery-redrive';
import { Redriver } from '../poison/redrive';
import { Sweeper } from '../sweep/incoming-sweep';
import { Recovery } from '../watchdog/recovery';
import type { BatchParts } from './batches';
import type { AppCore } from './core';
import type { DrainParts } from './drains';
import type { EventParts } from './events';

export interface RecoveryParts {
  recovery: Recovery;
  sweeper: Sweeper;
  redriver: Redriver;
}

export function composeRecovery(
  core: AppCore,
  { events }: Pick<EventParts, 'events'>,
  batches: Pick<BatchParts, 'finalizer' | 'watchdog' | 'ingestor'>,
  { drains }: Pick<DrainParts, 'drains'>,
): RecoveryParts {
  const { settings, blobs, queues, manifests, notifier, open, names, now, log, telemetry, bus } = core;
  const { tuning } = settings;
  const recovery = new Recovery({
    open,
    manifests,
    finalizer: batches.finalizer,
    events,
    notifier,
    watchdog: batches.watchdog,
    names,
    drain: (queue, stage) => drains.wake(queue, stage),
    maxBatches: tuning.sweepMaxBatches,
    claimStaleMs: tuning.ingestClaimStaleSeconds * 1000,
    now,
    log,
    telemetry,
  });
  return {
    recovery,
    sweeper: new Sweeper({
      blobs,
      ingestor: batches.ingestor,
      memory: core.memory,
      recovery,
      stallMs: tuning.stallSeconds * 1000,
      maxFiles: tuning.sweepMaxFiles,
      maxInflatedBytes: tuning.maxInflatedBytes,
      now,
      log,
    }),
    redriver: new Redriver({
      queues,
      manifests,
      open,
      notifier,
      names,
      log,
      deadLetters: bus.deadLetters,
      deliveries: (req) =>
        redriveDeliveries({ queues, manifests, open, events, poisonQueue: names.deliveriesPoisonQueue, now, log }, req),
    }),
  };
}
