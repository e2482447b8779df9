/**
 * Scenario 8: scale-out across instances. A backlog is submitted through the real POST handler
 * in this process (the HTTP side) while no instance runs, so it is all queued at once; then the
 * drain side starts: a fleet of local host processes on one Azurite and one broker, started and
 * stopped by the simulated scale controller from the `drain` subscription's active count
 * (ceil(active ÷ maxConcurrentCalls), +≤4 per decision, idle ones removed after a cool-down),
 * from zero instances and back to zero.
 *
 * It reports each instance's share (its own GET /api/health), the controller's decisions, the
 * instance count over time, whether every report equals the oracle, and what is held afterwards.
 * On a 2-core machine more instances add no CPU: the figures are distribution, not speed-up.
 */
import { createWriteStream } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';

import { PushdrainApp } from '../../../shared/app';
import { loadSettings } from '../../../shared/config/settings';
import { composeApp } from '../../../shared/create-app';
import { SUBSCRIPTIONS, TOPIC } from '../../../shared/names';
import { provisionStorage } from '../../devstack/provision-storage';
import type { Decision } from '../../devstack/scale/controller';
import { runFleet, type RunningFleet, targetPerInstance } from '../../devstack/scale/fleet';
import { expectedReport } from '../../testkit/oracle';
import { CompletionWatcher } from '../support/completion';
import { type CpuHog, startCpuHog } from '../support/cpu-hog';
import { batchBody, type BatchSpec, batchTransactions } from '../support/data';
import { startEnv } from '../support/env';
import { sleep } from '../support/fleet';
import { benchLog } from '../support/log';
import { postNdjson } from '../support/submit';

export interface ScaleOutConfig {
  batches: BatchSpec[];
  /** Smaller chunks and fewer messages per drain than the defaults: a local instance is a small share of 2 cores. */
  chunkSize: number;
  messagesPerDrain: number;
  /**
   * Messages one drain keeps in flight are at most tasks × batch; below messagesPerDrain, so a
   * leader cannot take the whole (scaled-down) backlog into its own hands and leave the fan-out
   * nothing visible. The defaults (8 × 32 = 256 < 512) keep the same proportion.
   */
  dequeueBatchSize: number;
  maxDequeueTasks: number;
  messagesPerTask: number;
  maxInstances: number;
  /**
   * Messages in flight on another instance look, to a drain's closing look, like a crashed
   * host's: it schedules a wake-up one visibility timeout ahead, and the run waits for it.
   * @defaultValue the app's (60 s); the smoke run shortens it.
   */
  visibilityTimeoutSeconds?: number;
  coolDownMs: number;
  /** Every instance's output goes here (git-ignored), for reading the run afterwards. */
  instanceLog?: string;
  intervalMs: number;
  timeoutMs: number;
  /**
   * The overload run: one busy process per core beside the fleet from the controller's start to
   * the last report, each spinning at most this long. Absent: the plain run.
   */
  cpuHogMaxMs?: number;
}

interface InstanceShare {
  name: string;
  startedAtMs: number;
  stoppedAtMs?: number;
  exitCode?: number | null;
  input: number;
  output: number;
  fanOutPublished: number;
  /** Input messages it processed while another delivery had them too (found taken at delete). */
  inputDuplicates: number;
  leasesLost: number;
  visibilityExtensions: number;
  /** Its event loop's delay p99 over its life, ms. */
  eventLoopDelayP99Ms: number;
}

export interface ScaleOutRun {
  transactions: number;
  batches: number;
  chunks: number;
  settings: Record<string, string>;
  targetPerInstance: number;
  /** Controller start (backlog in place) to the last report completed. */
  elapsedMs: number;
  /** First POST to the last 202 (no instance running yet). */
  submitMs: number;
  /** Transactions and messages queued when the controller started. */
  backlog: { transactions: number; inputMessages: number; activeEvents: number };
  /** Sampled once a second: ms since the controller started, active messages, instances. */
  timeline: { tMs: number; active: number; instances: number }[];
  decisions: Decision[];
  shares: InstanceShare[];
  peakInstances: number;
  reportsExact: number;
  /** Busy processes beside the fleet (the overload run); 0 in the plain run. */
  hogProcesses: number;
  /**
   * Chunks mapped more than once: input messages processed (deleted) or found taken after
   * processing, beyond one per chunk.
   */
  processedTwice: number;
  leasesLost: number;
  visibilityExtensions: number;
  /** The worst instance's event-loop delay p99, ms. */
  eventLoopDelayP99Ms: number;
  /** After the fleet scaled back to zero. */
  after: {
    instances: number;
    subscriptions: Record<string, number>;
    scheduledOnTopic: number;
    queuedMessages: number;
    scaledToZeroMs: number | undefined;
    /**
     * Instances started after the last report, while nothing was queued: each one a cold start
     * for nothing (a scheduled continuation that came due; 0 is the design's promise).
     */
    startsAfterLastReport: number;
    /** Instances started after the controller's first decision that processed no message at all. */
    startsForNothing: number;
  };
}

export async function runScaleOut(cfg: ScaleOutConfig, log: (line: string) => void): Promise<ScaleOutRun> {
  const env = await startEnv(0);
  const settingsEnv: Record<string, string> = {
    StorageConnection: env.azurite.connectionString,
    ServiceBusConnection: env.broker.connectionString,
    PUSHDRAIN_CHUNK_SIZE: String(cfg.chunkSize),
    PUSHDRAIN_MESSAGES_PER_DRAIN: String(cfg.messagesPerDrain),
    PUSHDRAIN_DEQUEUE_BATCH_SIZE: String(cfg.dequeueBatchSize),
    PUSHDRAIN_MAX_DEQUEUE_TASKS: String(cfg.maxDequeueTasks),
    PUSHDRAIN_MESSAGES_PER_TASK: String(cfg.messagesPerTask),
    ...(cfg.visibilityTimeoutSeconds !== undefined
      ? { PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: String(cfg.visibilityTimeoutSeconds) }
      : {}),
    PUSHDRAIN_SCALE_MODE: 'off',
    PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
  };
  const settings = loadSettings(settingsEnv);
  const parts = composeApp(settings, { log: benchLog });
  const http = new PushdrainApp(parts);
  const watcher = new CompletionWatcher(settings);
  const target = targetPerInstance();
  let fleet: RunningFleet | undefined;
  const active = (sub: string): number => {
    const c = env.broker.counts(`${TOPIC}/Subscriptions/${sub}`);
    return c ? c.available + c.locked : 0;
  };
  const out = cfg.instanceLog ? createWriteStream(cfg.instanceLog) : undefined;
  const timeline: ScaleOutRun['timeline'] = [];
  let sampling = true;
  let sampler: Promise<void> = Promise.resolve();
  let hog: CpuHog | undefined;
  try {
    await provisionStorage(settings);
    const s0 = Date.now();
    const ids: string[] = [];
    for (const spec of cfg.batches) ids.push(await postNdjson(http, batchBody(spec)));
    const submitMs = Date.now() - s0;
    let inputMessages = 0;
    for (const q of parts.names.inputQueues()) inputMessages += await parts.queues.depth(q);
    const backlog = {
      transactions: cfg.batches.reduce((a, b) => a + b.count, 0),
      inputMessages,
      activeEvents: active(SUBSCRIPTIONS.drain.name),
    };
    log(
      `  scale-out: ${ids.length} batches submitted in ${(submitMs / 1000).toFixed(1)} s; backlog ${backlog.transactions} transactions in ${inputMessages} messages, ${backlog.activeEvents} events; starting the controller`,
    );
    const t0 = Date.now();
    if (cfg.cpuHogMaxMs !== undefined) {
      hog = startCpuHog(cfg.cpuHogMaxMs);
      log(`  scale-out: CPU hog of ${hog.processes} busy processes (at most ${(cfg.cpuHogMaxMs / 1000).toFixed(0)} s)`);
    }
    const running = runFleet({
      broker: env.broker,
      env: settingsEnv,
      rule: {
        targetPerInstance: target,
        maxStep: 4,
        minInstances: 0,
        maxInstances: cfg.maxInstances,
        coolDownMs: cfg.coolDownMs,
      },
      intervalMs: cfg.intervalMs,
      log: (l) => log(`  ${l}`),
      ...(out ? { echo: (l: string) => void out.write(`${((Date.now() - t0) / 1000).toFixed(1)} ${l}\n`) } : {}),
    });
    fleet = running;
    sampler = (async () => {
      // Bounded by `sampling`, switched off below.
      while (sampling) {
        timeline.push({ tMs: Date.now() - t0, active: active(SUBSCRIPTIONS.drain.name), instances: running.size() });
        await sleep(1000);
      }
    })();
    const done = await watcher.wait(ids, cfg.timeoutMs);
    const elapsedMs = Math.max(...done.map((d) => d.completedAt)) - t0;
    await hog?.stop();
    log(
      `  scale-out: all completed ${(elapsedMs / 1000).toFixed(1)} s after the first POST; waiting for the fleet to scale in`,
    );
    // Late hand-overs (a drain that ended while others still held messages schedules a look one
    // visibility timeout later) wake an instance again: wait until none is scheduled on the topic
    // and every one has been consumed.
    const idleFrom = Date.now();
    let scaledToZeroMs: number | undefined;
    const allQuiet = (): boolean =>
      Object.values(SUBSCRIPTIONS).every((x) => active(x.name) === 0) && (env.broker.scheduledCount(TOPIC) ?? 0) === 0;
    for (let i = 0; i < 1500 && Date.now() - idleFrom < 240_000; i++) {
      if (running.size() === 0 && allQuiet()) {
        scaledToZeroMs = Date.now() - idleFrom;
        break;
      }
      await sleep(200);
    }
    let exact = 0;
    for (const [i, id] of ids.entries()) {
      const got = await watcher.runtime.report(id);
      const expected = expectedReport(batchTransactions(cfg.batches[i]!));
      if (
        got.kind === 'ready' &&
        got.report.transactions === expected.transactions &&
        isDeepStrictEqual(got.report.rows, expected.rows) &&
        isDeepStrictEqual(got.report.totals, expected.totals)
      )
        exact++;
    }
    let queued = 0;
    for (const q of parts.names.allQueues()) queued += await parts.queues.depth(q);
    const subscriptions = Object.fromEntries(Object.values(SUBSCRIPTIONS).map((s) => [s.name, active(s.name)]));
    sampling = false;
    await sampler;
    const shares = (await running.stop()).map((s) => ({
      name: s.name,
      startedAtMs: s.startedAtMs,
      ...(s.stoppedAtMs !== undefined ? { stoppedAtMs: s.stoppedAtMs, exitCode: s.exitCode ?? null } : {}),
      input: s.activity?.processed.map ?? 0,
      output: s.activity?.processed.reduce ?? 0,
      fanOutPublished: s.activity?.fanOutPublished ?? 0,
      inputDuplicates: s.activity?.duplicates?.map ?? 0,
      leasesLost: s.activity?.leasesLost ?? 0,
      visibilityExtensions: s.activity?.visibilityExtensions ?? 0,
      eventLoopDelayP99Ms: s.activity?.eventLoopDelay?.p99Ms ?? 0,
    }));
    const chunks = cfg.batches.reduce((a, b) => a + Math.ceil(b.count / cfg.chunkSize), 0);
    const mapped = shares.reduce((a, x) => a + x.input + x.inputDuplicates, 0);
    const transactions = done.reduce((a, d) => a + d.transactions, 0);
    return {
      transactions,
      batches: ids.length,
      chunks,
      settings: {
        chunkSize: String(cfg.chunkSize),
        messagesPerDrain: String(cfg.messagesPerDrain),
        drainSlots: String(settings.tuning.drainSlots),
        partitions: String(settings.tuning.partitions),
        inFlightPerDrain: String(cfg.dequeueBatchSize * cfg.maxDequeueTasks),
      },
      targetPerInstance: target,
      elapsedMs,
      submitMs,
      backlog,
      timeline,
      decisions: [...running.decisions],
      shares,
      peakInstances: Math.max(0, ...timeline.map((t) => t.instances)),
      reportsExact: exact,
      hogProcesses: hog?.processes ?? 0,
      processedTwice: Math.max(0, mapped - chunks),
      leasesLost: shares.reduce((a, x) => a + x.leasesLost, 0),
      visibilityExtensions: shares.reduce((a, x) => a + x.visibilityExtensions, 0),
      eventLoopDelayP99Ms: Math.max(0, ...shares.map((x) => x.eventLoopDelayP99Ms)),
      after: {
        instances: running.size(),
        subscriptions,
        scheduledOnTopic: env.broker.scheduledCount(TOPIC) ?? 0,
        queuedMessages: queued,
        scaledToZeroMs,
        startsAfterLastReport: shares.filter((x) => x.startedAtMs > elapsedMs).length,
        startsForNothing: shares.slice(running.decisions[0]?.added ?? 0).filter((x) => x.input + x.output === 0).length,
      },
    };
  } finally {
    await hog?.stop();
    sampling = false;
    await sampler;
    await fleet?.stop();
    await watcher.close();
    await http.close();
    await env.stop();
    out?.end();
  }
}
