/**
 * The composition root: every client, adapter and pipeline step is built here, once, from
 * validated settings, use case by use case (shared/compose/). Nothing else in shared/ picks an
 * adapter or builds an SDK client.
 */
import { PushdrainApp } from './app';
import { Access } from './auth/access';
import type { AppOptions } from './compose/app-options';
import type { AppParts } from './compose/app-parts';
import { composeBatches } from './compose/batches';
import { composeCore } from './compose/core';
import { composeDrains } from './compose/drains';
import { composeEvents } from './compose/events';
import { composeRecovery } from './compose/recovery';
import { composeScaleAgent } from './compose/scale';
import { composeStatus } from './compose/status';
import type { Settings } from './config/settings';

export function composeApp(settings: Settings, options: AppOptions = {}): AppParts {
  const core = composeCore(settings, options);
  const { events, testEvents } = composeEvents(core);
  const batches = composeBatches(core, events);
  const { drains, continuations } = composeDrains(core, batches);
  const { recovery, sweeper, redriver } = composeRecovery(core, { events }, batches, { drains });
  const { status, inspector, deadLetterTally } = composeStatus(core, { drains });
  const { names, blobs, queues, bus } = core;
  return {
    settings,
    names,
    meter: core.meter,
    usage: core.usage,
    missing: core.missing,
    memory: core.memory,
    clock: core.clock,
    log: core.log,
    blobs,
    queues,
    manifests: core.manifests,
    notifier: core.notifier,
    activity: core.activity,
    observer: core.observer,
    telemetry: core.telemetry,
    ...batches,
    events,
    testEvents,
    drains,
    continuations,
    recovery,
    sweeper,
    redriver,
    scaleAgent: composeScaleAgent(core),
    access: new Access(settings.auth),
    status,
    inspector,
    deadLetters: bus.deadLetters,
    deadLetterTally,
    syphon: bus.syphon,
  };
}

/** The application, wired from settings. */
export function createApp(settings: Settings, options: AppOptions = {}): PushdrainApp {
  return new PushdrainApp(composeApp(settings, options));
}
