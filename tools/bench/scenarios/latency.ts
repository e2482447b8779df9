/**
 * Scenario 5, submit-to-report latency on a warm system: one app per design and repetition
 * takes an untimed warm-up batch (≤ 1,000 transactions), then batches one at a time, each submitted a random 0.5–1.5 s
 * after the previous one completed (so the classic poller's phase is random, and pushdrain's
 * drains are typically still winding down, as on a busy day). Measured from the start of the
 * POST to the report's `completedAt`. Designs run one after another, never side by side, and
 * their order rotates between repetitions.
 */
import type { DesignName } from '../app';
import { batchBody, type BatchSpec } from '../support/data';
import type { BenchEnv } from '../support/env';
import { sleep, startFleetApp, stopFleetApp } from '../support/fleet';

export interface LatencyConfig {
  reps: number;
  trialsPerRep: number;
  /** Transactions per batch, by design (the no-claim-check baseline is scaled down). */
  batchSize: Record<DesignName, number>;
  gapMinMs: number;
  gapMaxMs: number;
}

export interface LatencyTrial {
  design: DesignName;
  rep: number;
  transactions: number;
  latencyMs: number;
}

const TIMEOUT_MS = 300_000;

export async function runLatency(
  env: BenchEnv,
  cfg: LatencyConfig,
  designs: readonly DesignName[],
  random: () => number,
): Promise<LatencyTrial[]> {
  const out: LatencyTrial[] = [];
  for (let rep = 0; rep < cfg.reps; rep++) {
    const order = designs.map((_, i) => designs[(i + rep) % designs.length] as DesignName);
    for (const design of order) {
      const f = await startFleetApp(env, design, { random });
      try {
        const spec = (i: number): BatchSpec => ({ count: cfg.batchSize[design], seed: 300 + i });
        // Warm-up: connections, JIT and a first drain; its size does not matter, so keep it small.
        await f.watcher.wait(
          [await f.app.submit(batchBody({ count: Math.min(1_000, cfg.batchSize[design]), seed: 300 }))],
          TIMEOUT_MS,
        );
        for (let i = 1; i <= cfg.trialsPerRep; i++) {
          await sleep(cfg.gapMinMs + random() * (cfg.gapMaxMs - cfg.gapMinMs));
          const body = batchBody(spec(i));
          const t0 = Date.now();
          const [done] = await f.watcher.wait([await f.app.submit(body)], TIMEOUT_MS);
          out.push({ design, rep, transactions: cfg.batchSize[design], latencyMs: done!.completedAt - t0 });
        }
      } finally {
        await stopFleetApp(env, f);
      }
    }
  }
  return out;
}
