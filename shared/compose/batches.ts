/** A batch's way through: ingest, the map and reduce steps, progress, finalize, its reads and the watchdog. */
import { availableParallelism } from 'node:os';

import { BatchPages } from '../batch/batch-pages';
import { BatchReader } from '../batch/batch-reader';
import { ProgressRecorder } from '../batch/progress';
import { RecentResults } from '../billing/result-blob';
import type { EventDelivery } from '../events/event-delivery';
import { chunkRule } from '../ingest/chunk-size';
import { Ingestor } from '../ingest/ingest';
import { Finalizer } from '../pipeline/finalize';
import { MAP_BYTES_PER_CORE, MapProcessor } from '../pipeline/map-processor';
import { ReduceProcessor } from '../pipeline/reduce-processor';
import { Watchdog } from '../watchdog/check-batch';
import type { AppCore } from './core';

export interface BatchParts {
  progress: ProgressRecorder;
  finalizer: Finalizer;
  ingestor: Ingestor;
  reader: BatchReader;
  batchPages: BatchPages;
  map: MapProcessor;
  reduce: ReduceProcessor;
  watchdog: Watchdog;
}

export function composeBatches(core: AppCore, events: EventDelivery): BatchParts {
  const { settings, blobs, queues, manifests, notifier, open, owners, names, now, clock, log, telemetry, memory } =
    core;
  const { tuning } = settings;
  // What the map step writes, the finalizer of a batch drained in this process reads back from memory.
  const recent = new RecentResults();
  const finalizer = new Finalizer({
    blobs,
    manifests,
    open,
    now,
    log,
    recent,
    events,
    telemetry,
    checks: notifier,
    prices: settings.prices,
  });
  const progress = new ProgressRecorder(manifests, now, finalizer);
  return {
    progress,
    finalizer,
    ingestor: new Ingestor({
      blobs,
      queues,
      manifests,
      notifier,
      open,
      owners,
      finalizer,
      names,
      chunkSize: tuning.chunkSize,
      chunks: chunkRule(tuning),
      claimStaleMs: tuning.ingestClaimStaleSeconds * 1000,
      now,
      log,
      telemetry,
    }),
    reader: new BatchReader(manifests, blobs, settings.prices),
    batchPages: new BatchPages(blobs, owners),
    map: new MapProcessor({
      blobs,
      queues,
      notifier,
      progress,
      finalizer,
      recent,
      resultsQueue: names.resultsQueue,
      taxRates: settings.taxRates,
      telemetry,
      now,
      acceptance: { manifests, sleep: (ms) => clock.sleep(ms) },
      memory: memory.part(MAP_BYTES_PER_CORE * availableParallelism()),
    }),
    reduce: new ReduceProcessor(progress, finalizer, log, telemetry),
    watchdog: new Watchdog({
      manifests,
      progress,
      finalizer,
      blobs,
      queues,
      notifier,
      names,
      maxChecks: tuning.watchdogMaxChecks,
      log,
      telemetry,
    }),
  };
}
