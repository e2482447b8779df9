/**
 * Scenario 4, wake latency: a one-chunk batch arrives after a long idle; measured from the
 * moment its pointer is enqueued (the put's response) to the first receive that returns it,
 * both observed on the wire by a ProbeMeter, the same way for every design.
 *
 * pushdrain really idles: each app takes a warm-up batch, waits until its drains have exited
 * (the meter stops moving), then a trial batch arrives; trials repeat on the same app after it
 * is idle again. Several apps run side by side, each with its own topic.
 * The baselines' idle would take minutes to reach (the Functions back-off needs ~100 s of empty
 * polls to reach its 60 s cap), so each trial is a fresh app whose listeners start in the state
 * a 10–20 minute idle leaves them in: the Functions rule replayed to that moment, or for the
 * classic poller a uniformly random phase of its 1 s period. See runWake for what runs when.
 */
import { entityNames } from '../../../shared/names';
import type { DesignName } from '../app';
import { DESIGNS } from '../app';
import { batchBody } from '../support/data';
import type { BenchEnv } from '../support/env';
import { type FleetApp, sleep, startFleetApp, stopFleetApp, untilQuiet } from '../support/fleet';
import { ProbeMeter } from '../support/probe-meter';

export interface WakeConfig {
  /** pushdrain trials per repetition (they run one after another on each app). */
  trialsPerRep: number;
  /**
   * Baseline trials per repetition: cheap (each is an app of its own, all side by side), and
   * needed, because the Functions back-off spreads wake-ups uniformly over a minute.
   */
  baselineTrialsPerRep: number;
  reps: number;
  /** Baselines: quiet time after their apps have started, then arrivals spread over spreadMs. */
  settleMs: number;
  spreadMs: number;
  /** Classic-poller apps running trials at once (each polls 5 queues a second). */
  classicWave: number;
  /** pushdrain apps running trials side by side. */
  pushdrainApps: number;
  /** The idle gap before each baseline trial is drawn from [min, max]. */
  idleMinMs: number;
  idleMaxMs: number;
  /**
   * How long pushdrain's meter must stay still before it counts as idle: longer than its
   * back-off cap, so a task still sleeping between receives is never mistaken for gone.
   */
  quietMs: number;
  /**
   * pushdrain: warm each app up and wait for its drains to exit before the first trial (true),
   * or run one trial per fresh app, which is just as idle but pays first-use costs (smoke runs).
   */
  pushdrainWarmup: boolean;
}

export interface WakeTrial {
  design: DesignName;
  rep: number;
  latencyMs: number;
  /** The idle period the trial followed (simulated for the baselines). */
  idleMs: number;
}

/** One transaction: one pointer (or, without claim check, one message) on one input queue. */
const TRIAL_BATCH = { count: 1, seed: 91 };
/** Longer than the Functions back-off cap (60 s), the longest a trial can legitimately wait. */
const TIMEOUT_MS = 90_000;

/** Submits the trial batch and resolves with put → first non-empty receive on its input queue. */
async function trial(f: FleetApp, probe: ProbeMeter): Promise<number> {
  probe.arm();
  await f.app.submit(batchBody(TRIAL_BATCH));
  const inputs = new Set(entityNames(f.app.settings.namePrefix, f.app.settings.tuning.partitions).inputQueues());
  const deadline = Date.now() + TIMEOUT_MS;
  // Bounded by the deadline; the probe is filled in by the app's own receives.
  while (Date.now() < deadline) {
    const seen = probe.seen().find((s) => inputs.has(s.queue) && s.getAt !== undefined);
    if (seen?.getAt !== undefined) return seen.getAt - seen.putAt;
    await sleep(20);
  }
  throw new Error(`${f.app.design}: no dequeue of the trial's message within ${TIMEOUT_MS} ms`);
}

async function pushdrainTrials(env: BenchEnv, cfg: WakeConfig, total: number): Promise<WakeTrial[]> {
  const out: WakeTrial[] = [];
  const apps = cfg.pushdrainWarmup ? Math.max(1, Math.min(cfg.pushdrainApps, total)) : total;
  let next = 0;
  await Promise.all(
    Array.from({ length: apps }, async () => {
      const probe = new ProbeMeter();
      const f = await startFleetApp(env, 'pushdrain', { meter: probe });
      try {
        if (!cfg.pushdrainWarmup) {
          const i = next++;
          out.push({ design: 'pushdrain', rep: i % cfg.reps, latencyMs: await trial(f, probe), idleMs: 0 });
          return;
        }
        await f.watcher.wait([await f.app.submit(batchBody(TRIAL_BATCH))], TIMEOUT_MS);
        // Bounded by `total`: each iteration claims one trial number.
        for (let i = next++; i < total; i = next++) {
          const idleMs = await untilQuiet(f.app, cfg.quietMs, 60_000);
          out.push({ design: 'pushdrain', rep: i % cfg.reps, latencyMs: await trial(f, probe), idleMs });
        }
      } finally {
        await stopFleetApp(env, f);
      }
    }),
  );
  return out;
}

/** One wave of baseline trials: start the apps, let the start-up burst pass, spread the arrivals. */
async function baselineWave(
  env: BenchEnv,
  cfg: WakeConfig,
  design: DesignName,
  first: number,
  count: number,
  random: () => number,
): Promise<WakeTrial[]> {
  const apps: { f: FleetApp; probe: ProbeMeter; idleMs: number; n: number }[] = [];
  try {
    await Promise.all(
      Array.from({ length: count }, async (_, k) => {
        const idleMs = cfg.idleMinMs + random() * (cfg.idleMaxMs - cfg.idleMinMs);
        const probe = new ProbeMeter();
        apps.push({
          f: await startFleetApp(env, design, { meter: probe, idleMs, random }),
          probe,
          idleMs,
          n: first + k,
        });
      }),
    );
    // Every app creating its queues at once keeps the emulator busy for a moment, and a busy
    // emulator lengthens every poll cycle: wait that out, then spread the arrivals.
    await sleep(cfg.settleMs);
    return await Promise.all(
      apps.map(async ({ f, probe, idleMs, n }) => {
        await sleep(random() * cfg.spreadMs);
        return { design, rep: n % cfg.reps, latencyMs: await trial(f, probe), idleMs };
      }),
    );
  } finally {
    await Promise.all(apps.map(({ f }) => stopFleetApp(env, f)));
  }
}

/**
 * The Functions-style apps poll once a minute when idle, so all their trials run side by side;
 * the classic poller's apps poll every second, so they run a few at a time, or together they
 * would saturate the emulator (one thread) and slow every poll they are measured by.
 */
async function baselineTrials(
  env: BenchEnv,
  cfg: WakeConfig,
  design: DesignName,
  total: number,
  random: () => number,
): Promise<WakeTrial[]> {
  const wave = design === 'classic-poller' ? Math.max(1, cfg.classicWave) : total;
  const out: WakeTrial[] = [];
  for (let first = 0; first < total; first += wave)
    out.push(...(await baselineWave(env, cfg, design, first, Math.min(wave, total - first), random)));
  return out;
}

/**
 * The Functions-style trials wait up to a minute with almost no load, so pushdrain's trials run
 * inside that minute; the classic poller's waves (5 queues a second each, apps coming and going)
 * run after pushdrain's, so they never share the emulator with a pushdrain measurement.
 */
export async function runWake(env: BenchEnv, cfg: WakeConfig, random: () => number): Promise<WakeTrial[]> {
  const slow = Promise.all(
    DESIGNS.filter((d) => d !== 'pushdrain' && d !== 'classic-poller').map((d) =>
      baselineTrials(env, cfg, d, cfg.baselineTrialsPerRep * cfg.reps, random),
    ),
  );
  // Keep the slow group's rejection observed while the others run; it is awaited below.
  slow.catch(() => undefined);
  const ours = await pushdrainTrials(env, cfg, cfg.trialsPerRep * cfg.reps);
  const classic = await baselineTrials(env, cfg, 'classic-poller', cfg.baselineTrialsPerRep * cfg.reps, random);
  return [...ours, ...classic, ...(await slow).flat()];
}
