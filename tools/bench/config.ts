/**
 * The bench's sizes and repetitions, for the full run and for the smoke run (--quick). The
 * full run is budgeted to finish in under 15 minutes on 2 cores (see BENCHMARKS.md for the
 * measured split); the smoke run takes seconds and exists so the harness cannot rot.
 */
import { defaultTuning } from '../../shared/config/settings';
import type { DesignName } from './app';
import type { BrokerConfig } from './scenarios/broker';
import type { IdleConfig } from './scenarios/idle';
import type { LatencyConfig } from './scenarios/latency';
import type { HttpMemoryConfig } from './scenarios/memory-http';
import type { ScaleOutConfig } from './scenarios/scale-out';
import type { TrickleConfig } from './scenarios/trickle';
import type { WakeConfig } from './scenarios/wake';
import type { WebhooksConfig } from './scenarios/webhooks';
import type { PeerConfig } from './scenarios/webjobs-peer';
import { type BatchSpec, batchSpecs } from './support/data';

export const SCENARIOS = [
  'throughput',
  'storage',
  'idle',
  'wake',
  'latency',
  'trickle',
  'memory',
  'limit',
  'broker',
  'scaleout',
  'overload',
  'telemetry',
  'webhooks',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export interface BenchConfig {
  mode: 'full' | 'quick';
  seed: number;
  throughput: {
    reps: number;
    /** Batches per design; the no-claim-check baseline gets its own, smaller set. */
    batches: BatchSpec[];
    noClaimCheckBatches: BatchSpec[];
    /** CPU-profile every design's first repetition (the report names pushdrain's top functions). */
    profile: boolean;
  };
  idle: IdleConfig;
  wake: WakeConfig & { pushdrainWarmup: boolean };
  latency: LatencyConfig;
  trickle: TrickleConfig;
  memory: { sizes: number[]; reps: number; http: Omit<HttpMemoryConfig, 'sources'> };
  /** With the throughput scenario, one limit run opens each of its repetitions instead of `reps`. */
  limit: { reps: number; batches: BatchSpec[] };
  /** The development broker, in memory and durable: each repetition runs both, in alternating order. */
  broker: BrokerConfig;
  scaleOut: ScaleOutConfig;
  /** The scale-out run again beside a CPU hog (one busy process per core): each spins at most this long. */
  overload: { cpuHogMaxMs: number };
  /** The real queue trigger beside the port, with idle, wake or trickle; `peers: 0` skips it. */
  webjobsPeer: PeerConfig;
  /** Batch events to a webhook receiver: completion → received, and idle with webhooks on. */
  webhooks: WebhooksConfig;
}

const tuning = defaultTuning();

/** Longer than pushdrain's back-off cap: a quiet meter then means every dequeue task has exited. */
const DRAIN_QUIET_MS = tuning.maxIdleMs + 1_000;

/** pushdrain apps a run starts in all; each gets a topic copy of its own (see support/env.ts). */
export function pushdrainAppCount(c: BenchConfig): number {
  const wake = c.wake.pushdrainWarmup ? c.wake.pushdrainApps : c.wake.reps * c.wake.trialsPerRep;
  // The telemetry scenario runs each throughput repetition twice: telemetry off, then to an OTLP sink.
  const telemetry = 2 * c.throughput.reps;
  // Trickle runs pushdrain three times per repetition: as deployed (with the batch-events topic),
  // without that topic, and writing its usage leftovers (the attribution check).
  // Throughput runs pushdrain untimed before its repetitions: behind the counting proxy, and
  // CPU-profiled when asked (scenarios/throughput-runs.ts).
  const throughput = c.throughput.reps + 1 + (c.throughput.profile ? 1 : 0);
  return throughput + c.idle.reps + wake + c.latency.reps + 3 * c.trickle.reps + telemetry + c.webhooks.reps;
}

export function fullConfig(): BenchConfig {
  const batches = batchSpecs(10, 100_000, 1_000);
  return {
    mode: 'full',
    // Two hosts of five queues; the idle window holds about three capped polls per queue.
    webjobsPeer: {
      peers: 2,
      settleMaxMs: 300_000,
      idleWindowMs: 180_000,
      wakeSpreadMs: 60_000,
      trickleMessages: 10,
      trickleGapMs: 8_000,
    },
    seed: 20_261_120,
    throughput: { reps: 3, batches, noClaimCheckBatches: batchSpecs(2, 250, 5_000), profile: true },
    idle: { reps: 3, functionsAppsPerRep: 8, windowMs: 20_000, warmTransactions: 10, sweepPeriodMs: 5 * 60_000 },
    wake: {
      reps: 3,
      trialsPerRep: 5,
      baselineTrialsPerRep: 10,
      settleMs: 2_000,
      spreadMs: 3_000,
      classicWave: 5,
      pushdrainApps: 8,
      idleMinMs: 10 * 60_000,
      idleMaxMs: 20 * 60_000,
      quietMs: DRAIN_QUIET_MS,
      pushdrainWarmup: true,
    },
    latency: {
      reps: 3,
      trialsPerRep: 3,
      batchSize: {
        pushdrain: 10_000,
        'classic-poller': 10_000,
        'functions-queue': 10_000,
        'no-claim-check': 100,
      } satisfies Record<DesignName, number>,
      gapMinMs: 500,
      gapMaxMs: 1_500,
    },
    // A steady trickle: 1,000-transaction batches 8 s apart. One repetition of ten
    // batches per design, all designs in the same window (~90 s).
    trickle: {
      reps: 1,
      batches: 10,
      batchSize: {
        pushdrain: 1_000,
        'classic-poller': 1_000,
        'functions-queue': 1_000,
        'no-claim-check': 100,
      } satisfies Record<DesignName, number>,
      gapMs: 8_000,
      quietMs: DRAIN_QUIET_MS,
    },
    memory: {
      sizes: [250_000, 1_000_000],
      reps: 2,
      // The largest batches accepted: 1,000,000 gzipped, and plain up to the body cap.
      http: {
        cases: [
          { transactions: 250_000, gzip: false },
          { transactions: 1_000_000, gzip: false },
          { transactions: 1_000_000, gzip: true },
          { transactions: 1_000_000, gzip: false, instanceMemoryMb: 512 },
          { transactions: 1_000_000, gzip: true, instanceMemoryMb: 512 },
          // Issue "Fits the instance": eight of the largest at once against a 512 MB instance.
          { transactions: 1_000_000, gzip: true, instanceMemoryMb: 512, batches: 8 },
        ],
        reps: 1,
        timeoutMs: 1_200_000,
      },
    },
    // The throughput run's own batches: a run as long as pushdrain's (9–10 s, not 1.5 s), so a
    // pair meets the same spell of the machine, and the same work, heap growth and all.
    limit: { reps: 3, batches },
    broker: { reps: 3, messages: 3_000, senders: 16, receivers: 4 },
    // The throughput batches (1,000,000 transactions) in 2,000 chunks of 500: 500 per queue, one
    // drain per 32 queued makes each of the 4 queues want 16 drains (64 events, 4 instances at 16).
    // At most 4 instances: each is a Node process on the same 2 cores (and Azurite with them).
    scaleOut: {
      batches,
      chunkSize: 500,
      messagesPerDrain: 32,
      dequeueBatchSize: 8,
      maxDequeueTasks: 4,
      messagesPerTask: 8,
      maxInstances: 4,
      coolDownMs: 5_000,
      intervalMs: 1_000,
      timeoutMs: 15 * 60_000,
    },
    overload: { cpuHogMaxMs: 10 * 60_000 },
    webhooks: {
      reps: 1,
      batches: 30,
      batchSize: 100,
      gapMinMs: 200,
      gapMaxMs: 600,
      coldGapMs: 5_000,
      idleWindowMs: 20_000,
      quietMs: DRAIN_QUIET_MS,
    },
  };
}

export function quickConfig(): BenchConfig {
  const batches = batchSpecs(2, 500, 9_000);
  return {
    mode: 'quick',
    // Its back-off alone takes minutes to reach the cap: not in the seconds-long smoke run.
    webjobsPeer: { peers: 0, settleMaxMs: 0, idleWindowMs: 0, wakeSpreadMs: 0, trickleMessages: 0, trickleGapMs: 0 },
    seed: 7,
    throughput: { reps: 1, batches, noClaimCheckBatches: batchSpecs(1, 30, 9_500), profile: true },
    idle: { reps: 1, functionsAppsPerRep: 1, windowMs: 1_000, warmTransactions: 10, sweepPeriodMs: 5 * 60_000 },
    // Seconds, not minutes: a short simulated idle, and pushdrain trials on fresh (idle) apps.
    wake: {
      reps: 1,
      trialsPerRep: 1,
      baselineTrialsPerRep: 1,
      settleMs: 100,
      spreadMs: 100,
      classicWave: 1,
      pushdrainApps: 1,
      idleMinMs: 500,
      idleMaxMs: 1_000,
      quietMs: DRAIN_QUIET_MS,
      pushdrainWarmup: false,
    },
    latency: {
      reps: 1,
      trialsPerRep: 1,
      batchSize: { pushdrain: 200, 'classic-poller': 200, 'functions-queue': 200, 'no-claim-check': 10 },
      gapMinMs: 50,
      gapMaxMs: 100,
    },
    trickle: {
      reps: 1,
      batches: 2,
      batchSize: { pushdrain: 100, 'classic-poller': 100, 'functions-queue': 100, 'no-claim-check': 10 },
      gapMs: 1_500,
      quietMs: DRAIN_QUIET_MS,
    },
    memory: {
      sizes: [300, 1_000],
      reps: 1,
      http: {
        cases: [
          { transactions: 1_000, gzip: false },
          { transactions: 1_000, gzip: true, instanceMemoryMb: 512, batches: 2 },
        ],
        reps: 1,
        timeoutMs: 120_000,
      },
    },
    limit: { reps: 1, batches: batches.slice(0, 1) },
    broker: { reps: 1, messages: 200, senders: 8, receivers: 2 },
    scaleOut: {
      batches: batchSpecs(2, 5_000, 9_100),
      chunkSize: 50,
      messagesPerDrain: 8,
      dequeueBatchSize: 4,
      maxDequeueTasks: 2,
      messagesPerTask: 4,
      maxInstances: 3,
      visibilityTimeoutSeconds: 5,
      coolDownMs: 2_000,
      intervalMs: 500,
      timeoutMs: 3 * 60_000,
    },
    // Two seconds of busy processes: enough to run the hog's start and stop, which is what the smoke
    // run is for. Minutes of them would starve every other test the suite runs beside it.
    overload: { cpuHogMaxMs: 2_000 },
    webhooks: {
      reps: 1,
      batches: 3,
      batchSize: 20,
      gapMinMs: 50,
      gapMaxMs: 100,
      coldGapMs: 4_500,
      idleWindowMs: 1_000,
      quietMs: DRAIN_QUIET_MS,
    },
  };
}
