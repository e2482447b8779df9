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
 * classic poller a uniformly random phase of its 1 s period. Many such apps run side by side.
 * Idle pollers cost a few requests a second in all, so the trials do not disturb each other.
 */
import type { DesignName } from '../app';
import { DESIGNS } from '../app';
import { batchBody } from '../support/data';
import type { BenchEnv } from '../support/env';
import { type FleetApp, sleep, startFleetApp, stopFleetApp, untilQuiet } from '../support/fleet';
import { ProbeMeter } from '../support/probe-meter';

export interface WakeConfig {
  trialsPerRep: number;
  reps: number;
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
  const inputs = new Set(f.app.runtime.ctx.names.inputQueues());
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

async function baselineTrials(env: BenchEnv, cfg: WakeConfig, design: DesignName, total: number, random: () => number): Promise<WakeTrial[]> {
  return Promise.all(
    Array.from({ length: total }, async (_, i) => {
      const idleMs = cfg.idleMinMs + random() * (cfg.idleMaxMs - cfg.idleMinMs);
      const probe = new ProbeMeter();
      const f = await startFleetApp(env, design, { meter: probe, idleMs, random });
      try {
        return { design, rep: i % cfg.reps, latencyMs: await trial(f, probe), idleMs };
      } finally {
        await stopFleetApp(env, f);
      }
    }),
  );
}

export async function runWake(env: BenchEnv, cfg: WakeConfig, random: () => number): Promise<WakeTrial[]> {
  const total = cfg.trialsPerRep * cfg.reps;
  const groups = await Promise.all(DESIGNS.map((d) => (d === 'pushdrain' ? pushdrainTrials(env, cfg, total) : baselineTrials(env, cfg, d, total, random))));
  return groups.flat();
}

