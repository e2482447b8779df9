/**
 * Scenario 1 (and the data of scenario 2): N transactions as B batches, posted one after the
 * other as a client would, timed from the first POST to the last report `completed`. Each run
 * is a child process, so its CPU time is the app's alone; Azurite's CPU time is read from
 * /proc over the same window (the machine may be shared, so its total busy time is not used). The app's storage transactions come
 * from its meter; pushdrain's also go through a counting proxy in the parent (throughput-runs.ts), whose count over the app's
 * life must equal the meter's (`meterLifetime`). The first batch's report is checked against the independent oracle.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';

import type { PriceSettings } from '../../../shared/config/price-settings';
import { telemetrySettings } from '../../../shared/config/telemetry-settings';
import { batchCost } from '../../../shared/cost/batch-cost';
import { meterDelta, type MeterSnapshot } from '../../../shared/storage/meter';
import { startTelemetry } from '../../../shared/telemetry/start-telemetry';
import type { Telemetry } from '../../../shared/telemetry/telemetry';
import { expectedReport } from '../../testkit/oracle';
import type { DesignName } from '../app';
import { startApp } from '../designs';
import { CompletionWatcher } from '../support/completion';
import { pidCpuSeconds, processCpuSeconds } from '../support/cpu';
import { batchBody, type BatchSpec, batchTransactions } from '../support/data';
import { adminClients, appSettings, removeApp } from '../support/env';
import { problems } from '../support/log';
import { type Profiling, startProfiling } from '../support/profiler';

export interface ThroughputJob {
  kind: 'throughput';
  design: DesignName;
  /** The app's storage (pushdrain: through the parent's counting proxy). */
  storage: string;
  /** Azurite itself, for the watcher and clean-up: their reads are not the app's. @defaultValue storage */
  direct?: string;
  serviceBus?: { connectionString: string; topic: string };
  prefix: string;
  batches: BatchSpec[];
  azuritePid?: number;
  /** Write a CPU profile of the measured window here. */
  profileFile?: string;
  /** pushdrain only: send spans and metrics to this OTLP/HTTP endpoint (http/protobuf). */
  telemetryEndpoint?: string;
  timeoutMs: number;
}

export interface ThroughputRun {
  design: DesignName;
  transactions: number;
  batches: number;
  /** First POST to the last `completedAt`. */
  elapsedMs: number;
  /** First POST to the last 202: how long the client was busy submitting. */
  submitMs: number;
  tps: number;
  /** This process (the app) only. */
  appCpuSeconds: number;
  /** The storage emulator, which stands in for Azure Storage's servers. */
  azuriteCpuSeconds: number;
  storage: MeterSnapshot;
  /** pushdrain: the batches' estimated cost per 1,000 transactions (USD), from their manifests' usage. */
  usdPer1000?: number;
  /** The meter over the app's whole life (taken once it stopped), to compare with the wire. */
  meterLifetime: MeterSnapshot;
  /** RSS high-water mark of the app process (start-up and set-up included). */
  peakRssMb: number;
  verified: boolean;
  warnings: string[];
  profileFile?: string;
  /** How late the app's event loop ran timers over the measured window (lease renewals are timers), ms. */
  eventLoopDelay?: { p99Ms: number; maxMs: number };
  /**
   * The share of the window the main thread was busy (not waiting for I/O): near 1, one thread is
   * what limits the app, and a second core (4,096 MB) could only be used off the main thread.
   */
  eventLoopUtilization?: number;
}

export async function throughputJob(job: ThroughputJob): Promise<ThroughputRun> {
  const bodies = job.batches.map(batchBody);
  let telemetry: Telemetry | undefined;
  if (job.telemetryEndpoint) {
    // The SDK reads its configuration from the environment; this child process runs this one job.
    Object.assign(process.env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: job.telemetryEndpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_METRIC_EXPORT_INTERVAL: '5000',
    });
    telemetry = await startTelemetry(telemetrySettings(process.env));
  }
  const app = await startApp(job.design, {
    prefix: job.prefix,
    storage: job.storage,
    ...(job.direct ? { provisionVia: job.direct } : {}),
    ...(job.serviceBus ? { serviceBus: job.serviceBus } : {}),
    ...(telemetry ? { telemetry } : {}),
  });
  const direct = job.direct ?? job.storage;
  const watcher = new CompletionWatcher(appSettings({ storage: direct }, job.prefix));
  let run: Omit<ThroughputRun, 'meterLifetime'>;
  try {
    const before = app.meter.snapshot();
    let profiling: Profiling | undefined;
    if (job.profileFile) profiling = await startProfiling(job.profileFile);
    // 20 ms sampling, as the app's own (shared/util/event-loop-delay.ts); the resolution is taken off.
    const loop = monitorEventLoopDelay({ resolution: 20 });
    loop.enable();
    const elu0 = performance.eventLoopUtilization();
    const cpu0 = processCpuSeconds();
    const azurite0 = job.azuritePid ? pidCpuSeconds(job.azuritePid) : Number.NaN;
    const t0 = Date.now();
    const ids: string[] = [];
    for (const body of bodies) ids.push(await app.submit(body));
    const submitted = Date.now();
    const done = await watcher.wait(ids, job.timeoutMs);
    // What is still buffered is exported inside the window: its cost is telemetry's.
    await telemetry?.shutdown();
    const cpu1 = processCpuSeconds();
    const elu = performance.eventLoopUtilization(elu0).utilization;
    loop.disable();
    const loopMs = (ns: number): number => Math.max(0, Math.round(ns / 1e6 - 20));
    const azurite1 = job.azuritePid ? pidCpuSeconds(job.azuritePid) : Number.NaN;
    const profileFile = profiling ? await profiling.stop() : undefined;
    const storage = meterDelta(app.meter.snapshot(), before);
    const end = Math.max(...done.map((d) => d.completedAt));
    const transactions = done.reduce((a, d) => a + d.transactions, 0);
    const elapsedMs = Math.max(1, end - t0);
    const verified = await verifyFirst(watcher, ids[0] as string, job.batches[0] as BatchSpec);
    // After the window: the usage still waiting for its manifest write is written, then read back.
    await app.flushUsage?.();
    const usdPer1000 = app.flushUsage ? await costPer1000(watcher, ids, app.settings.prices) : undefined;
    run = {
      design: job.design,
      transactions,
      batches: ids.length,
      elapsedMs,
      submitMs: submitted - t0,
      tps: (transactions * 1000) / elapsedMs,
      appCpuSeconds: cpu1 - cpu0,
      azuriteCpuSeconds: azurite1 - azurite0,
      storage,
      ...(usdPer1000 !== undefined ? { usdPer1000 } : {}),
      // resourceUsage().maxRSS is in kilobytes.
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      verified,
      warnings: problems.slice(0, 20),
      eventLoopDelay: { p99Ms: loopMs(loop.percentile(99)), maxMs: loopMs(loop.max) },
      eventLoopUtilization: elu,
      ...(profileFile ? { profileFile } : {}),
    };
  } finally {
    await app.stop();
    await watcher.close();
    await removeApp(adminClients(direct), job.prefix);
  }
  return { ...run, meterLifetime: app.meter.snapshot() };
}

/** The batches' estimated cost per 1,000 transactions, from the usage on their manifests. */
async function costPer1000(watcher: CompletionWatcher, ids: readonly string[], prices: PriceSettings): Promise<number> {
  let usd = 0;
  let transactions = 0;
  for (const { usage, transactions: n } of await watcher.usage(ids)) {
    transactions += n;
    if (usage) usd += batchCost(usage, n, prices).estimate.perBatch;
  }
  return transactions > 0 ? (usd * 1000) / transactions : 0;
}

/** The report of the first batch equals the oracle's (BigInt arithmetic, no shared code). */
async function verifyFirst(watcher: CompletionWatcher, batchId: string, spec: BatchSpec): Promise<boolean> {
  const got = await watcher.runtime.report(batchId);
  if (got.kind !== 'ready') return false;
  const expected = expectedReport(batchTransactions(spec));
  return (
    got.report.transactions === expected.transactions &&
    isDeepStrictEqual(got.report.rows, expected.rows) &&
    isDeepStrictEqual(got.report.totals, expected.totals)
  );
}
