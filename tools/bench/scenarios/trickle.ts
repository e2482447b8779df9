/**
 * Scenario 8, work that trickles in: B small batches (1,000 transactions), submitted `gapMs`
 * apart (start to start), each awaited until its report is completed, as a client sending a
 * stream of small batches would. What it costs in storage transactions per 1,000 business
 * transactions, by operation, and how long each batch takes from submission to report.
 *
 * Every design runs in the same window, side by side (timers, not CPU, set these costs), with
 * their submissions offset by gapMs / designs so no two designs' batches land together. Storage
 * is counted over B × gapMs from each design's first submission: every batch owns one period,
 * so a design's wind-down after a batch counts as long as it falls within the period, and a
 * poller's empty polls count for the whole window. pushdrain's meter is also read once it has
 * gone quiet after the window, so a drain that outlived it is seen (`afterWindow`).
 * pushdrain's storage is counted twice: by its own meter and at the wire, by a counting proxy in
 * front of Azurite that sees every request it sends (support/fleet.ts); the two must agree.
 * pushdrain runs twice in the same window: as deployed (every batch's CloudEvent to the
 * `batch-events` topic) and without that topic, so what the topic delivery costs is the difference.
 */
import { CHUNK_PIECE } from '../../../shared/ingest/chunk-size';
import { meterDelta, type MeterSnapshot } from '../../../shared/storage/meter';
import type { StatsSnapshot } from '../../devstack/servicebus/stats';
import type { DesignName } from '../app';
import { batchBody } from '../support/data';
import type { BenchEnv } from '../support/env';
import { type FleetApp, settledCounts, sleep, startFleetApp, stopFleetApp, untilQuiet } from '../support/fleet';
import { serviceBusOperations } from '../support/service-bus';

export interface TrickleConfig {
  reps: number;
  batches: number;
  /** Transactions per batch, by design (the no-claim-check baseline is scaled down). */
  batchSize: Record<DesignName, number>;
  /** Submission to submission. */
  gapMs: number;
  /** pushdrain: how long its meter must stay still after the window to count as quiet. */
  quietMs: number;
}

export interface TrickleRun {
  design: DesignName;
  /** pushdrain's second app in the window: no `batch-events` topic delivery. */
  withoutBatchEvents?: boolean;
  rep: number;
  batches: number;
  transactions: number;
  windowMs: number;
  /** The app's storage transactions over the window, by operation, by its own meter. */
  storage: MeterSnapshot;
  /** pushdrain: the same, counted at the wire by a proxy in front of Azurite (what Azure bills). */
  wire?: MeterSnapshot;
  /** pushdrain only: what it did after the window until its meter went quiet (0 when its drains fit the window). */
  afterWindow: number;
  /** Service Bus operations over the window (pushdrain is the broker's only user here). */
  serviceBusOperations: number;
  /** Submission (start of the POST) to the report's completedAt, per batch. */
  latenciesMs: number[];
}

const BATCH_TIMEOUT_MS = 120_000;
const SEED_BASE = 8_000;

function statsDelta(after: StatsSnapshot, before: StatsSnapshot): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
}

async function trickle(
  env: BenchEnv,
  f: FleetApp,
  design: DesignName,
  withoutBatchEvents: boolean,
  rep: number,
  cfg: TrickleConfig,
  offsetMs: number,
): Promise<TrickleRun> {
  await sleep(offsetMs);
  const size = cfg.batchSize[design];
  const bodies = Array.from({ length: cfg.batches }, (_, i) => batchBody({ count: size, seed: SEED_BASE + i }));
  const pd = design === 'pushdrain';
  const { meter: before, wire: wire0 } = await settledCounts(f);
  const broker0 = pd ? env.broker.stats() : undefined;
  const t0 = Date.now();
  const latenciesMs: number[] = [];
  for (let i = 0; i < bodies.length; i++) {
    await sleep(t0 + i * cfg.gapMs - Date.now());
    const start = Date.now();
    const [done] = await f.watcher.wait([await f.app.submit(bodies[i]!)], BATCH_TIMEOUT_MS);
    latenciesMs.push(done!.completedAt - start);
  }
  await sleep(t0 + cfg.batches * cfg.gapMs - Date.now());
  const windowMs = Date.now() - t0;
  const end = await settledCounts(f);
  const storage = meterDelta(end.meter, before);
  const wire = end.wire && wire0 ? meterDelta(end.wire, wire0) : undefined;
  const serviceBus = broker0 ? serviceBusOperations(statsDelta(env.broker.stats(), broker0)) : 0;
  let afterWindow = 0;
  if (pd) {
    const at = f.app.meter.total();
    await untilQuiet(f.app, cfg.quietMs, 60_000);
    afterWindow = f.app.meter.total() - at;
  }
  return {
    design,
    ...(withoutBatchEvents ? { withoutBatchEvents } : {}),
    rep,
    batches: cfg.batches,
    transactions: size * cfg.batches,
    windowMs,
    storage,
    ...(wire ? { wire } : {}),
    afterWindow,
    serviceBusOperations: serviceBus,
    latenciesMs,
  };
}

export async function runTrickle(
  env: BenchEnv,
  cfg: TrickleConfig,
  designs: readonly DesignName[],
  random: () => number,
): Promise<TrickleRun[]> {
  const out: TrickleRun[] = [];
  for (let rep = 0; rep < cfg.reps; rep++) {
    const fleet: { design: DesignName; withoutBatchEvents: boolean; f: FleetApp }[] = [];
    const wanted = designs.flatMap((design): { design: DesignName; withoutBatchEvents: boolean }[] =>
      design === 'pushdrain'
        ? [
            { design, withoutBatchEvents: false },
            { design, withoutBatchEvents: true },
          ]
        : [{ design, withoutBatchEvents: false }],
    );
    try {
      await Promise.all(
        wanted.map(async ({ design, withoutBatchEvents }) =>
          fleet.push({
            design,
            withoutBatchEvents,
            f: await startFleetApp(env, design, { random, withoutBatchEvents }),
          }),
        ),
      );
      // Warm-up: connections, JIT and first-use costs (each queue's first drain slot) stay out of
      // the window; a batch of one chunk per partition touches every input queue.
      await Promise.all(
        fleet.map(async ({ design, f }) => {
          // One smallest chunk per partition (the chunk size rule gives a batch this small CHUNK_PIECE-sized chunks).
          const { partitions, chunkSize } = f.app.settings.tuning;
          const body = batchBody({
            count: design === 'no-claim-check' ? 10 : partitions * Math.min(chunkSize, CHUNK_PIECE),
            seed: SEED_BASE - 1,
          });
          await f.watcher.wait([await f.app.submit(body)], BATCH_TIMEOUT_MS);
        }),
      );
      await sleep(cfg.gapMs);
      const slots = wanted.map((w) => `${w.design}${w.withoutBatchEvents ? '-' : ''}`);
      const order = slots.map((_, i) => slots[(i + rep) % slots.length] as string);
      const runs = await Promise.all(
        fleet.map(({ design, withoutBatchEvents, f }) =>
          trickle(
            env,
            f,
            design,
            withoutBatchEvents,
            rep,
            cfg,
            (order.indexOf(`${design}${withoutBatchEvents ? '-' : ''}`) * cfg.gapMs) / slots.length,
          ),
        ),
      );
      out.push(...runs);
    } finally {
      await Promise.all(fleet.map(({ f }) => stopFleetApp(env, f)));
    }
  }
  return out;
}
