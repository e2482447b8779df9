/** Draining the queues: the coordinator with its slots and processors, and the continuations it schedules. */
import { Continuations } from '../drain/continuations';
import { DrainCoordinator } from '../drain/coordinator';
import { parseWorkPointer } from '../model/chunk-codec';
import { BlobLeaseSlots } from '../storage/lease-slots';
import { drainCounters } from '../telemetry/drain-counters';
import type { BatchParts } from './batches';
import type { AppCore } from './core';

export interface DrainParts {
  drains: DrainCoordinator;
  continuations: Continuations;
}

export function composeDrains(core: AppCore, { map, reduce }: Pick<BatchParts, 'map' | 'reduce'>): DrainParts {
  const { settings, blobs, queues, notifier, names, clock, log, activity, observer, telemetry } = core;
  const { tuning } = settings;
  const { metrics } = telemetry;
  const continuations = new Continuations({
    publish: (queue, delayMs) => notifier.continuation(queue, delayMs),
    depth: (queue) => queues.depth(queue),
    clock,
    log,
  });
  const drains = new DrainCoordinator({
    queues,
    slots: new BlobLeaseSlots(
      blobs,
      (queue) => (queue === names.resultsQueue ? tuning.resultsDrainSlots : tuning.drainSlots),
      log,
    ),
    processors: { map: activity.countingBilled(map, (m) => parseWorkPointer(m.text).count), reduce },
    continuation: (queue, delayMs) => continuations.schedule(queue, delayMs),
    seenEmpty: (queue, lookedAt) => continuations.seenEmpty(queue, lookedAt),
    fanOut: async (queue, count) => {
      await notifier.fanOut(queue, count);
      metrics.fanOut(count);
    },
    clock,
    log,
    tuning,
    onRunning: (n) => observer.drainsRunning(n),
    counters: drainCounters(metrics, names.stageOf),
  });
  return { drains, continuations };
}
