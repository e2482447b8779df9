/**
 * Turns the raw runs of each scenario into the figures the report shows: a median with min and
 * max over repetitions for every design, and pushdrain ÷ baseline ratios paired by repetition
 * (the same run, the same data).
 */
import { isDeepStrictEqual } from 'node:util';

import type { MeterSnapshot } from '../../shared/storage/meter';
import { BASELINES, type DesignName, DESIGNS } from './app';
import type { IdleResult } from './scenarios/idle';
import type { LatencyTrial } from './scenarios/latency';
import type { LimitRun } from './scenarios/limit';
import type { MemoryResultRun } from './scenarios/memory';
import type { HttpMemoryResultRun } from './scenarios/memory-http';
import type { ThroughputRunRecord } from './scenarios/throughput-runs';
import type { TrickleRun } from './scenarios/trickle';
import type { WakeTrial } from './scenarios/wake';
import { percentile, ratioSummary, summarize, type Summary } from './stats';
import type { FunctionBeside, HotFunction } from './support/profiler';
import { serviceBusOperations } from './support/service-bus';

type PerDesign<T> = Partial<Record<DesignName, T>>;
type Ratios = PerDesign<Summary>;

export interface ThroughputFigures {
  perDesign: PerDesign<{
    transactions: number;
    batches: number;
    tps: Summary;
    cpuPerMillion: Summary;
    azuriteCpuPerMillion: Summary;
    peakRssMb: Summary;
    verified: boolean;
  }>;
  /** pushdrain tps ÷ baseline tps (above 1: pushdrain is faster). */
  tpsRatio: Ratios;
  /** pushdrain CPU per 1M ÷ baseline's (below 1: pushdrain uses less). */
  cpuRatio: Ratios;
}

export interface StorageFigures {
  perDesign: PerDesign<{
    per1000: Summary;
    byOperation: Record<string, Summary>;
    serviceBusPer1000: Summary;
    /** pushdrain: the batches' estimated cost per 1,000 transactions (USD, from their manifests' usage). */
    usdPer1000?: Summary;
  }>;
  /** pushdrain ÷ baseline (below 1: pushdrain makes fewer storage transactions). */
  ratio: Ratios;
}

export interface IdleFigures {
  windowSeconds: number;
  queuesPerApp: number;
  perDesign: PerDesign<{
    afterWork: Summary;
    steady: Summary;
    perHour: Summary;
    perMonth: Summary;
    perQueuePerMonth: Summary;
    serviceBusPerHour: Summary;
    steadyByOperation: Record<string, Summary>;
  }>;
  /** pushdrain's periodic sweep, included in its per-hour figure. */
  sweep: { perRun: number; runsPerHour: number; perHour: number };
  broker: IdleResult['broker'];
  /** pushdrain ÷ baseline storage transactions per idle hour. */
  ratio: Ratios;
}

export interface LatencyFigures {
  perDesign: PerDesign<{ trials: number; p50: Summary; p95: Summary; transactions?: number }>;
  /** pushdrain p50 ÷ baseline p50 (below 1: pushdrain is quicker). */
  p50Ratio: Ratios;
  p95Ratio: Ratios;
}

export interface TrickleFigures {
  batches: number;
  gapSeconds: number;
  perDesign: PerDesign<{
    transactionsPerBatch: number;
    per1000: Summary;
    /** pushdrain: the same storage counted at the wire (a proxy in front of Azurite). */
    wirePer1000?: Summary;
    /** pushdrain: windows where the wire and the meter disagreed on some operation. */
    wireMismatches?: number;
    /** pushdrain warm: the batches' estimated cost per 1,000 transactions (USD, at the app's list prices). */
    usdPer1000?: Summary;
    byOperation: Record<string, Summary>;
    serviceBusPer1000: Summary;
    afterWindow: Summary;
    p50: Summary;
    p95: Summary;
  }>;
  /** pushdrain ÷ baseline, storage per 1,000 (below 1: pushdrain makes fewer). */
  ratio: Ratios;
  p50Ratio: Ratios;
  /** pushdrain in the same window without the `batch-events` topic delivery. */
  pushdrainWithoutBatchEvents?: { per1000: Summary; wirePer1000?: Summary; byOperation: Record<string, Summary> };
  /** pushdrain cold: fresh instances for every batch, each counted over its whole life. */
  pushdrainCold?: TrickleDesignFigures & { instancesPerBatch: number };
  /** pushdrain in the same window with PUSHDRAIN_USAGE_LEFTOVERS=write: what exact per-batch usage costs. */
  pushdrainLeftoversWritten?: { per1000: Summary; wirePer1000?: Summary };
  /** Baselines' runs stopped by a batch that did not complete (left out of the figures), with why. */
  stalled?: string[];
}

export type TrickleDesignFigures = NonNullable<TrickleFigures['perDesign']['pushdrain']>;

export interface MemoryFigures {
  sizes: {
    transactions: number;
    fileMb: number;
    peakRssMb: Summary;
    startRssMb: Summary;
    peakHeapUsedMb: Summary;
    ingestSeconds: Summary;
  }[];
  /** The HTTP path, a fresh instance per batch (memory-http.ts). */
  http: {
    transactions: number;
    gzip: boolean;
    instanceMemoryMb?: number;
    batches: number;
    refusals: Summary;
    /** In every run, every report had every transaction, and all of a run's reports agreed. */
    reportsAgree: boolean;
    bodyMb: number;
    startRssMb: Summary;
    ingestPeakRssMb: Summary;
    /** Absent where the instance's peak could not be set back after the 202. */
    drainPeakRssMb?: Summary;
    ingestSeconds: Summary;
    completeSeconds: Summary;
  }[];
}

export interface LimitFigures {
  transactions: number;
  tps: Summary;
  cpuPerMillion: Summary;
  /** pushdrain throughput ÷ the limit, paired by repetition. */
  pushdrainFraction: Summary | undefined;
  /** The limit's CPU per transaction ÷ pushdrain's app CPU per transaction: the share of pushdrain's CPU that is the work itself. */
  pushdrainCpuFraction: Summary | undefined;
}

export interface ProfileFigures {
  file: string;
  totalMs: number;
  gcMs: number;
  top: HotFunction[];
  /** The same window's functions beside the machine limit's (its first run, profiled alike), per 1M transactions. */
  beside?: { limitFile: string; rows: FunctionBeside[]; pushdrainMs: number; limitMs: number };
}

const byRep = <T extends { rep: number }>(items: readonly T[]): Map<number, T[]> => {
  const m = new Map<number, T[]>();
  for (const i of items) m.set(i.rep, [...(m.get(i.rep) ?? []), i]);
  return m;
};

function ratios(values: PerDesign<number[]>): Ratios {
  const out: Ratios = {};
  const ours = values.pushdrain ?? [];
  for (const b of BASELINES) {
    const r = ratioSummary(ours, values[b] ?? []);
    if (r) out[b] = r;
  }
  return out;
}

export function throughputFigures(runs: readonly ThroughputRunRecord[]): ThroughputFigures {
  const perDesign: ThroughputFigures['perDesign'] = {};
  const tps: PerDesign<number[]> = {};
  const cpu: PerDesign<number[]> = {};
  for (const d of DESIGNS) {
    const rs = runs.filter((r) => r.design === d).sort((a, b) => a.rep - b.rep);
    if (rs.length === 0) continue;
    tps[d] = rs.map((r) => r.tps);
    cpu[d] = rs.map((r) => (r.appCpuSeconds / r.transactions) * 1e6);
    perDesign[d] = {
      transactions: rs[0]!.transactions,
      batches: rs[0]!.batches,
      tps: summarize(tps[d]),
      cpuPerMillion: summarize(cpu[d]),
      azuriteCpuPerMillion: summarize(rs.map((r) => (r.azuriteCpuSeconds / r.transactions) * 1e6)),
      peakRssMb: summarize(rs.map((r) => r.peakRssMb)),
      verified: rs.every((r) => r.verified),
    };
  }
  return { perDesign, tpsRatio: ratios(tps), cpuRatio: ratios(cpu) };
}

export function storageFigures(runs: readonly ThroughputRunRecord[]): StorageFigures {
  const perDesign: StorageFigures['perDesign'] = {};
  const per1000: PerDesign<number[]> = {};
  for (const d of DESIGNS) {
    const rs = runs.filter((r) => r.design === d).sort((a, b) => a.rep - b.rep);
    if (rs.length === 0) continue;
    per1000[d] = rs.map((r) => ((r.storage.total ?? 0) * 1000) / r.transactions);
    perDesign[d] = {
      per1000: summarize(per1000[d]),
      byOperation: perOperation(rs.map((r) => scale(r.storage, 1000 / r.transactions))),
      serviceBusPer1000: summarize(rs.map((r) => (r.serviceBusOperations * 1000) / r.transactions)),
      ...(rs.some((r) => r.usdPer1000 !== undefined)
        ? { usdPer1000: summarize(rs.flatMap((r) => (r.usdPer1000 !== undefined ? [r.usdPer1000] : []))) }
        : {}),
    };
  }
  return { perDesign, ratio: ratios(per1000) };
}

function scale(m: MeterSnapshot, k: number): MeterSnapshot {
  return Object.fromEntries(Object.entries(m).map(([op, n]) => [op, n * k]));
}

/** Median/min/max per operation; an operation absent from a run counts as 0 there. */
function perOperation(snaps: readonly MeterSnapshot[]): Record<string, Summary> {
  const ops = [...new Set(snaps.flatMap((s) => Object.keys(s)))].filter((k) => k !== 'total').sort();
  return Object.fromEntries(ops.map((op) => [op, summarize(snaps.map((s) => s[op] ?? 0))]));
}

export function idleFigures(r: IdleResult): IdleFigures {
  const hour = 3_600_000;
  const sweepPerHour = (r.sweepRun.total ?? 0) * (hour / r.sweepPeriodMs);
  const perDesign: IdleFigures['perDesign'] = {};
  const perHourByDesign: PerDesign<number[]> = {};
  const brokerOps = serviceBusOperations(r.broker.steady) / Math.max(1, r.broker.pushdrainApps);
  for (const d of DESIGNS) {
    const rs = r.runs.filter((x) => x.design === d).sort((a, b) => a.rep - b.rep);
    if (rs.length === 0) continue;
    const extra = d === 'pushdrain' ? sweepPerHour : 0;
    const perHour = rs.map((x) => ((x.steady.total ?? 0) * hour) / r.windowMs + extra);
    perHourByDesign[d] = perHour;
    perDesign[d] = {
      afterWork: summarize(rs.map((x) => x.afterWork.total ?? 0)),
      steady: summarize(rs.map((x) => x.steady.total ?? 0)),
      perHour: summarize(perHour),
      perMonth: summarize(perHour.map((h) => h * 24 * 30)),
      perQueuePerMonth: summarize(perHour.map((h) => (h * 24 * 30) / r.queuesPerApp)),
      // Counted by the broker (sends, deliveries, settlements, management), shared evenly by the
      // pushdrain apps that were its only users; the baselines use no Service Bus at all.
      serviceBusPerHour: summarize(rs.map(() => (d === 'pushdrain' ? (brokerOps * hour) / r.windowMs : 0))),
      steadyByOperation: perOperation(rs.map((x) => x.steady)),
    };
  }
  return {
    windowSeconds: r.windowMs / 1000,
    queuesPerApp: r.queuesPerApp,
    perDesign,
    sweep: { perRun: r.sweepRun.total ?? 0, runsPerHour: hour / r.sweepPeriodMs, perHour: sweepPerHour },
    broker: r.broker,
    ratio: ratios(perHourByDesign),
  };
}

/** p50 and p95 within each repetition, then median/min/max of those over repetitions. */
export function latencyFigures(trials: readonly (WakeTrial | LatencyTrial)[]): LatencyFigures {
  const perDesign: LatencyFigures['perDesign'] = {};
  const p50: PerDesign<number[]> = {};
  const p95: PerDesign<number[]> = {};
  for (const d of DESIGNS) {
    const ts = trials.filter((t) => t.design === d);
    if (ts.length === 0) continue;
    const reps = [...byRep(ts).entries()].sort(([a], [b]) => a - b).map(([, v]) => v.map((t) => t.latencyMs));
    p50[d] = reps.map((v) => percentile(v, 50));
    p95[d] = reps.map((v) => percentile(v, 95));
    const first = ts[0];
    perDesign[d] = {
      trials: ts.length,
      p50: summarize(p50[d]),
      p95: summarize(p95[d]),
      ...(first && 'transactions' in first ? { transactions: first.transactions } : {}),
    };
  }
  return { perDesign, p50Ratio: ratios(p50), p95Ratio: ratios(p95) };
}

/** The wire's count per 1,000 and how many windows it differed from the meter in (runs counted at the wire only). */
function wireFigures(rs: readonly TrickleRun[]): { wirePer1000?: Summary; wireMismatches?: number } {
  const counted = rs.filter((r) => r.wire);
  if (counted.length === 0) return {};
  return {
    wirePer1000: summarize(counted.map((r) => ((r.wire?.total ?? 0) * 1000) / r.transactions)),
    wireMismatches: counted.filter((r) => !isDeepStrictEqual(r.wire, r.storage)).length,
  };
}

function costFigures(rs: readonly TrickleRun[]): { usdPer1000?: Summary } {
  const priced = rs.flatMap((r) => (r.attribution ? [r.attribution.usdPer1000] : []));
  return priced.length > 0 ? { usdPer1000: summarize(priced) } : {};
}

export function trickleFigures(runs: readonly TrickleRun[], gapMs: number): TrickleFigures {
  const perDesign: TrickleFigures['perDesign'] = {};
  // Each design's app as deployed; a baseline's stalled run has no figures to show.
  const main = (d: DesignName): TrickleRun[] =>
    runs
      .filter((r) => r.design === d && !r.withoutBatchEvents && !r.leftoversWritten && !r.cold && !r.stalled)
      .sort((a, b) => a.rep - b.rep);
  /** pushdrain ÷ baseline, paired by repetition: a repetition a baseline stalled in has no pair. */
  const paired = (value: (r: TrickleRun) => number): Ratios => {
    const ours = new Map(main('pushdrain').map((r) => [r.rep, value(r)]));
    const out: Ratios = {};
    for (const b of BASELINES) {
      const theirs = main(b).filter((r) => ours.has(r.rep));
      const r = ratioSummary(
        theirs.map((t) => ours.get(t.rep) as number),
        theirs.map(value),
      );
      if (r) out[b] = r;
    }
    return out;
  };
  const stalled = runs.flatMap((r) => (r.stalled ? [`${r.design}, repetition ${r.rep + 1}: ${r.stalled}`] : []));
  for (const d of DESIGNS) {
    const rs = main(d);
    if (rs.length === 0) continue;
    // The estimated cost comes from the batches' exact usage: the app in the window that writes its leftovers.
    const exact = runs.filter((r) => r.design === d && r.leftoversWritten);
    perDesign[d] = { ...trickleDesignFigures(rs), ...costFigures(exact) };
  }
  const written = runs.filter((r) => r.leftoversWritten).sort((a, b) => a.rep - b.rep);
  const cold = runs.filter((r) => r.cold).sort((a, b) => a.rep - b.rep);
  const bare = runs.filter((r) => r.withoutBatchEvents).sort((a, b) => a.rep - b.rep);
  return {
    batches: runs[0]?.batches ?? 0,
    gapSeconds: gapMs / 1000,
    perDesign,
    ratio: paired((r) => ((r.storage.total ?? 0) * 1000) / r.transactions),
    p50Ratio: paired((r) => percentile(r.latenciesMs, 50)),
    ...(stalled.length > 0 ? { stalled } : {}),
    ...(bare.length > 0
      ? {
          pushdrainWithoutBatchEvents: {
            per1000: summarize(bare.map((r) => ((r.storage.total ?? 0) * 1000) / r.transactions)),
            ...(wireFigures(bare).wirePer1000 ? { wirePer1000: wireFigures(bare).wirePer1000 } : {}),
            byOperation: perOperation(bare.map((r) => scale(r.storage, 1000 / r.transactions))),
          },
        }
      : {}),
    ...(written.length > 0
      ? {
          pushdrainLeftoversWritten: {
            per1000: summarize(written.map((r) => ((r.storage.total ?? 0) * 1000) / r.transactions)),
            ...(wireFigures(written).wirePer1000 ? { wirePer1000: wireFigures(written).wirePer1000 } : {}),
          },
        }
      : {}),
    ...(cold.length > 0
      ? {
          pushdrainCold: {
            ...trickleDesignFigures(cold),
            instancesPerBatch: (cold[0]!.instances ?? 0) / cold[0]!.batches,
          },
        }
      : {}),
  };
}

function trickleDesignFigures(rs: readonly TrickleRun[]): TrickleDesignFigures {
  return {
    transactionsPerBatch: rs[0]!.transactions / rs[0]!.batches,
    per1000: summarize(rs.map((r) => ((r.storage.total ?? 0) * 1000) / r.transactions)),
    ...wireFigures(rs),
    ...costFigures(rs),
    byOperation: perOperation(rs.map((r) => scale(r.storage, 1000 / r.transactions))),
    serviceBusPer1000: summarize(rs.map((r) => (r.serviceBusOperations * 1000) / r.transactions)),
    afterWindow: summarize(rs.map((r) => r.afterWindow)),
    p50: summarize(rs.map((r) => percentile(r.latenciesMs, 50))),
    p95: summarize(rs.map((r) => percentile(r.latenciesMs, 95))),
  };
}

export function memoryFigures(
  runs: readonly MemoryResultRun[],
  httpRuns: readonly HttpMemoryResultRun[],
): MemoryFigures {
  const sizes = [...new Set(runs.map((r) => r.size))].sort((a, b) => a - b);
  const key = (r: HttpMemoryResultRun): string =>
    `${r.gzip}-${r.transactions}-${r.instanceMemoryMb ?? ''}-${r.batches}`;
  const cases = [...new Map(httpRuns.map((r) => [key(r), r])).values()];
  return {
    http: cases.map((c) => {
      const rs = httpRuns.filter((r) => key(r) === key(c));
      const drain = rs.flatMap((r) => (r.drainPeakRssMb === undefined ? [] : [r.drainPeakRssMb]));
      return {
        transactions: c.transactions,
        gzip: c.gzip,
        ...(c.instanceMemoryMb !== undefined ? { instanceMemoryMb: c.instanceMemoryMb } : {}),
        batches: c.batches,
        refusals: summarize(rs.map((r) => r.refusals)),
        reportsAgree: rs.every((r) => r.reportsAgree),
        bodyMb: c.bodyMb,
        startRssMb: summarize(rs.map((r) => r.startRssMb)),
        ingestPeakRssMb: summarize(rs.map((r) => r.ingestPeakRssMb)),
        ...(drain.length === rs.length ? { drainPeakRssMb: summarize(drain) } : {}),
        ingestSeconds: summarize(rs.map((r) => r.ingestMs / 1000)),
        completeSeconds: summarize(rs.map((r) => r.completeMs / 1000)),
      };
    }),
    sizes: sizes.map((size) => {
      const rs = runs.filter((r) => r.size === size);
      return {
        transactions: size,
        fileMb: (rs[0]?.fileBytes ?? 0) / (1024 * 1024),
        peakRssMb: summarize(rs.map((r) => r.peakRssMb)),
        startRssMb: summarize(rs.map((r) => r.startRssMb)),
        peakHeapUsedMb: summarize(rs.map((r) => r.peakHeapUsedMb)),
        ingestSeconds: summarize(rs.map((r) => r.ingestMs / 1000)),
      };
    }),
  };
}

export function limitFigures(runs: readonly LimitRun[], pushdrain: readonly ThroughputRunRecord[]): LimitFigures {
  const tps = runs.map((r) => r.tps);
  const cpu = runs.map((r) => (r.cpuSeconds / r.transactions) * 1e6);
  const ourCpu = pushdrain.map((r) => (r.appCpuSeconds / r.transactions) * 1e6);
  return {
    transactions: runs[0]?.transactions ?? 0,
    tps: summarize(tps),
    cpuPerMillion: summarize(cpu),
    pushdrainFraction: ratioSummary(
      pushdrain.map((r) => r.tps),
      tps,
    ),
    pushdrainCpuFraction: ratioSummary(cpu, ourCpu),
  };
}
