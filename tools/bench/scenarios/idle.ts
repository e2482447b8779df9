/**
 * Scenario 3, idle cost. Every design (R repetitions side by side: idle costs are set by timers,
 * not by CPU, so running them together changes nothing) takes one small batch; from the moment
 * each app's batch has completed, two windows are measured on that app:
 *   A  the first W seconds after the work: back-off tails, drains winding down;
 *   B  the next W seconds, steady idle, which is what an hour or a month of idle looks like.
 * For the Functions-style back-off, reaching steady idle takes about 100 s of empty polls
 * (100 ms doubling to the 60 s cap), so for window B its listeners are restarted in the state
 * a 10–20 minute idle leaves them in (the rule replayed by functions-backoff.ts idleState),
 * rather than waited out. pushdrain and the classic poller simply keep running.
 * pushdrain's only periodic cost, the incoming/ sweep timer (every 5 minutes by default), is
 * measured by running it once on an idle app and added to the hourly figure.
 */
import { entityNames } from '../../../shared/names';
import { meterDelta, type MeterSnapshot } from '../../../shared/storage/meter';
import type { StatsSnapshot } from '../../devstack/servicebus/stats';
import { type DesignName, DESIGNS } from '../app';
import { batchBody } from '../support/data';
import type { BenchEnv } from '../support/env';
import { type FleetApp, sleep, startFleetApp, stopFleetApp } from '../support/fleet';

export interface IdleConfig {
  reps: number;
  /**
   * Apps per repetition for the Functions-style designs: at the 60 s cap each queue polls 0 or 1
   * times in a 20–30 s window depending on its phase, so one app's count is mostly noise;
   * their sum over several apps, divided by the number of apps, is not.
   */
  functionsAppsPerRep: number;
  windowMs: number;
  warmTransactions: number;
  /** The sweep timer's period, to turn one measured sweep into an hourly figure. */
  sweepPeriodMs: number;
}

interface IdleRun {
  design: DesignName;
  rep: number;
  /** Apps averaged into this run. */
  apps: number;
  /** Storage transactions in window A and B, by operation (per app). */
  afterWork: MeterSnapshot;
  steady: MeterSnapshot;
  /** Messages the app sent to Service Bus in each window. */
  sentAfterWork: number;
  sentSteady: number;
}

export interface IdleResult {
  windowMs: number;
  queuesPerApp: number;
  runs: IdleRun[];
  functionsAppsPerRep: number;
  /** Broker counters over each window, all pushdrain apps together (baselines do not use it). */
  broker: { afterWork: Record<string, number>; steady: Record<string, number>; pushdrainApps: number };
  /** Storage transactions of one run of pushdrain's sweep timer on an idle app. */
  sweepRun: MeterSnapshot;
  sweepPeriodMs: number;
}

const FUNCTIONS_STYLE = new Set<DesignName>(['functions-queue', 'no-claim-check']);

function statsDelta(after: StatsSnapshot, before: StatsSnapshot): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

interface Timeline {
  a0: MeterSnapshot;
  a1: MeterSnapshot;
  b0: MeterSnapshot;
  b1: MeterSnapshot;
  /** Messages sent to Service Bus at a0, a1, b0, b1. */
  sent: [number, number, number, number];
}

/** One run per design and repetition: the average over that repetition's apps. */
function perRepRuns(fleet: readonly { design: DesignName; rep: number }[], lines: readonly Timeline[]): IdleRun[] {
  const groups = new Map<string, number[]>();
  fleet.forEach(({ design, rep }, i) =>
    groups.set(`${design}\u0000${rep}`, [...(groups.get(`${design}\u0000${rep}`) ?? []), i]),
  );
  const average = (idx: number[], pick: (t: Timeline) => MeterSnapshot): MeterSnapshot => {
    const sum: MeterSnapshot = {};
    for (const i of idx)
      for (const [op, n] of Object.entries(pick(lines[i]!))) sum[op] = (sum[op] ?? 0) + n / idx.length;
    return sum;
  };
  const sent = (idx: number[], from: 0 | 2): number =>
    idx.reduce((a, i) => a + (lines[i]!.sent[from + 1]! - lines[i]!.sent[from]), 0) / idx.length;
  return [...groups.entries()].map(([key, idx]) => {
    const [design, rep] = key.split('\u0000') as [DesignName, string];
    return {
      design,
      rep: Number(rep),
      apps: idx.length,
      afterWork: average(idx, (t) => meterDelta(t.a1, t.a0)),
      steady: average(idx, (t) => meterDelta(t.b1, t.b0)),
      sentAfterWork: sent(idx, 0),
      sentSteady: sent(idx, 2),
    };
  });
}

export async function runIdle(env: BenchEnv, cfg: IdleConfig, random: () => number): Promise<IdleResult> {
  const fleet: { design: DesignName; rep: number; f: FleetApp }[] = [];
  try {
    const wanted: { design: DesignName; rep: number }[] = [];
    for (let rep = 0; rep < cfg.reps; rep++) {
      for (const design of DESIGNS)
        for (let k = 0; k < (FUNCTIONS_STYLE.has(design) ? cfg.functionsAppsPerRep : 1); k++)
          wanted.push({ design, rep });
    }
    // Started together; each one pushed as soon as it is up, so a failure still stops the rest.
    await Promise.all(wanted.map(async (w) => fleet.push({ ...w, f: await startFleetApp(env, w.design, { random }) })));
    const body = batchBody({ count: cfg.warmTransactions, seed: 77 });
    const brokerAt: { a0: StatsSnapshot[]; a1: StatsSnapshot[]; b0: StatsSnapshot[]; b1: StatsSnapshot[] } = {
      a0: [],
      a1: [],
      b0: [],
      b1: [],
    };
    // Each app on its own clock: window A opens the moment its own batch has completed.
    const lines = await Promise.all(
      fleet.map(async ({ design, f }): Promise<Timeline> => {
        await f.watcher.wait([await f.app.submit(body)], 120_000);
        const pd = design === 'pushdrain';
        const s0 = f.app.sent();
        const a0 = f.app.meter.snapshot();
        if (pd) brokerAt.a0.push(env.broker.stats());
        await sleep(cfg.windowMs);
        const a1 = f.app.meter.snapshot();
        const s1 = f.app.sent();
        if (pd) brokerAt.a1.push(env.broker.stats());
        if (FUNCTIONS_STYLE.has(design)) await f.app.restartIdle?.(10 * 60_000 + random() * 10 * 60_000);
        const b0 = f.app.meter.snapshot();
        const s2 = f.app.sent();
        if (pd) brokerAt.b0.push(env.broker.stats());
        await sleep(cfg.windowMs);
        if (pd) brokerAt.b1.push(env.broker.stats());
        return { a0, a1, b0, b1: f.app.meter.snapshot(), sent: [s0, s1, s2, f.app.sent()] };
      }),
    );

    const first = fleet.find(({ design }) => design === 'pushdrain');
    let sweepRun: MeterSnapshot = {};
    if (first) {
      const before = first.f.app.meter.snapshot();
      await first.f.app.runtime.sweep();
      sweepRun = meterDelta(first.f.app.meter.snapshot(), before);
    }
    // pushdrain apps are the broker's only users here; their windows open within moments of each other.
    const span = (from: StatsSnapshot[], to: StatsSnapshot[]): Record<string, number> =>
      from.length > 0 && to.length > 0 ? statsDelta(to[to.length - 1]!, from[0]!) : {};
    return {
      windowMs: cfg.windowMs,
      queuesPerApp: first
        ? entityNames(first.f.app.settings.namePrefix, first.f.app.settings.tuning.partitions).inputQueues().length + 1
        : 0,
      functionsAppsPerRep: cfg.functionsAppsPerRep,
      runs: perRepRuns(fleet, lines),
      broker: {
        afterWork: span(brokerAt.a0, brokerAt.a1),
        steady: span(brokerAt.b0, brokerAt.b1),
        pushdrainApps: fleet.filter(({ design }) => design === 'pushdrain').length,
      },
      sweepRun,
      sweepPeriodMs: cfg.sweepPeriodMs,
    };
  } finally {
    await Promise.all(fleet.map(({ f }) => stopFleetApp(env, f)));
  }
}
