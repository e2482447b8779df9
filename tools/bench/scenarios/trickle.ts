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
 *
 * Then pushdrain runs cold, as scale-to-zero serves a trickle: every batch meets fresh instances,
 * one that takes the HTTP request and one per Service Bus trigger (drain, aggregate, scaling
 * agent), each started for the batch and stopped once quiet, so each one's whole life (start-up
 * and shutdown included) is counted, at the wire and by the instances' meters. The instances are
 * fresh apps in the bench process (their own SDK clients, Service Bus links and state): what they
 * ask of Storage is what a fresh process asks; their timing is not a cold process's.
 */
import { ensureError } from '../../../shared/errors';
import { CHUNK_PIECE } from '../../../shared/ingest/chunk-size';
import { meterDelta, type MeterSnapshot } from '../../../shared/storage/meter';
import { provisionStorage } from '../../devstack/provision-storage';
import type { StatsSnapshot } from '../../devstack/servicebus/stats';
import type { DesignName, PushdrainTrigger } from '../app';
import { startPushdrain } from '../pushdrain/app';
import { type Completed, CompletionTimeout, CompletionWatcher } from '../support/completion';
import { startCountingProxy } from '../support/counting-proxy';
import { batchBody } from '../support/data';
import { appSettings, type BenchEnv, removeApp } from '../support/env';
import {
  type AttributionCheck,
  checkAttribution,
  checkWire,
  type FleetApp,
  freshPrefix,
  settledCounts,
  sleep,
  startFleetApp,
  stopFleetApp,
  untilQuiet,
  wireChecks,
} from '../support/fleet';
import { recentProblems } from '../support/log';
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
  /**
   * pushdrain's third app in the window: PUSHDRAIN_USAGE_LEFTOVERS=write, so each batch's usage is
   * exact and its attribution is checked against the wire (what that exactness costs is its figure).
   */
  leftoversWritten?: boolean;
  /** pushdrain cold: fresh instances for every batch (`instances` in all), each counted over its whole life. */
  cold?: boolean;
  instances?: number;
  /** pushdrain cold: storage by instance kind (`http`, or the trigger it ran), summed over the batches. */
  byInstance?: Record<string, MeterSnapshot>;
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
  /** pushdrain warm: the batches' own Storage counts (their manifests) against the wire's, and their estimated cost. */
  attribution?: AttributionCheck;
  /**
   * A baseline's batch that did not complete in time, and what its queues and warnings then said:
   * the run stopped there, and its figures are left out (a pushdrain batch that does not complete
   * stops the bench instead).
   */
  stalled?: string;
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
  leftoversWritten: boolean,
  rep: number,
  cfg: TrickleConfig,
  offsetMs: number,
): Promise<TrickleRun> {
  await sleep(offsetMs);
  const size = cfg.batchSize[design];
  const bodies = Array.from({ length: cfg.batches }, (_, i) => batchBody({ count: size, seed: SEED_BASE + i }));
  const pd = design === 'pushdrain';
  // The warm-up batch's leftover usage is written before the window, so the window holds only these batches'.
  await f.app.flushUsage?.();
  const { meter: before, wire: wire0 } = await settledCounts(f);
  const ids: string[] = [];
  const broker0 = pd ? env.broker.stats() : undefined;
  const t0 = Date.now();
  const latenciesMs: number[] = [];
  for (let i = 0; i < bodies.length; i++) {
    await sleep(t0 + i * cfg.gapMs - Date.now());
    const start = Date.now();
    const id = await f.app.submit(bodies[i]!);
    ids.push(id);
    let done: Completed | undefined;
    try {
      [done] = await f.watcher.wait([id], BATCH_TIMEOUT_MS);
    } catch (e) {
      // The apps' warnings (a failed receive or invocation) say what the queues cannot.
      const warned = recentProblems.filter((p) => p.includes(f.prefix)).slice(-5);
      const held = f.app.inFlight ? `; its listeners held: ${f.app.inFlight()}` : '';
      const why = `batch ${i + 1} of ${bodies.length}: ${ensureError(e).message}; its queues then: ${await queueStates(env, f.prefix)}${held}; its last warnings: ${warned.join(' | ') || 'none'}`;
      // A baseline is a yardstick: its stall is reported and the other designs' window goes on.
      if (pd || !(e instanceof CompletionTimeout)) throw new Error(`${design}: ${why}`, { cause: e });
      // What was measured until then, and why it stopped: left out of the figures (analyze.ts).
      return {
        design,
        rep,
        batches: cfg.batches,
        transactions: size * cfg.batches,
        windowMs: Date.now() - t0,
        storage: {},
        afterWindow: 0,
        serviceBusOperations: 0,
        latenciesMs,
        stalled: why,
      };
    }
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
  let attribution: AttributionCheck | undefined;
  if (pd && wire0 && leftoversWritten) {
    // Every batch's usage on its manifest (its leftover flushed now), against the wire from the window's start.
    await f.app.flushUsage?.();
    const fin = await settledCounts(f);
    if (fin.wire) attribution = await checkAttribution('trickle', f, ids, meterDelta(fin.wire, wire0).total ?? 0);
  }
  return {
    design,
    ...(withoutBatchEvents ? { withoutBatchEvents } : {}),
    ...(leftoversWritten ? { leftoversWritten } : {}),
    rep,
    batches: cfg.batches,
    transactions: size * cfg.batches,
    windowMs,
    storage,
    ...(wire ? { wire } : {}),
    afterWindow,
    serviceBusOperations: serviceBus,
    latenciesMs,
    ...(attribution ? { attribution } : {}),
  };
}

/**
 * Each queue of the app, its depth and the messages visible in it (with their dequeue counts), read
 * with the bench's own client: what a stalled batch's pointer was doing (never received, received and
 * held invisible, or visible and nobody polling) when its wait ran out.
 */
async function queueStates(env: BenchEnv, prefix: string): Promise<string> {
  try {
    const out: string[] = [];
    for await (const q of env.admin.queues.listQueues({ prefix })) {
      const c = env.admin.queues.getQueueClient(q.name);
      const [props, peek] = await Promise.all([c.getProperties(), c.peekMessages({ numberOfMessages: 32 })]);
      const visible = peek.peekedMessageItems.map((m) => `${m.messageId} (dequeued ${m.dequeueCount})`);
      out.push(`${q.name}: ${props.approximateMessagesCount ?? 0} deep, visible [${visible.join(', ')}]`);
    }
    return out.join('; ') || 'none found';
  } catch (e) {
    return `unreadable (${ensureError(e).message})`;
  }
}

export async function runTrickle(
  env: BenchEnv,
  cfg: TrickleConfig,
  designs: readonly DesignName[],
  random: () => number,
): Promise<TrickleRun[]> {
  const out: TrickleRun[] = [];
  for (let rep = 0; rep < cfg.reps; rep++) {
    type Variant = { design: DesignName; withoutBatchEvents: boolean; leftoversWritten: boolean };
    const fleet: (Variant & { f: FleetApp })[] = [];
    const wanted = designs.flatMap((design): Variant[] =>
      design === 'pushdrain'
        ? [
            { design, withoutBatchEvents: false, leftoversWritten: false },
            { design, withoutBatchEvents: true, leftoversWritten: false },
            { design, withoutBatchEvents: false, leftoversWritten: true },
          ]
        : [{ design, withoutBatchEvents: false, leftoversWritten: false }],
    );
    const slotOf = (v: Variant): string =>
      `${v.design}${v.withoutBatchEvents ? '-' : ''}${v.leftoversWritten ? '+' : ''}`;
    try {
      await Promise.all(
        wanted.map(async (v) =>
          fleet.push({
            ...v,
            f: await startFleetApp(env, v.design, {
              random,
              withoutBatchEvents: v.withoutBatchEvents,
              ...(v.leftoversWritten ? { settings: { PUSHDRAIN_USAGE_LEFTOVERS: 'write' } } : {}),
            }),
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
      const slots = wanted.map(slotOf);
      const order = slots.map((_, i) => slots[(i + rep) % slots.length] as string);
      const runs = await Promise.all(
        fleet.map((v) =>
          trickle(
            env,
            v.f,
            v.design,
            v.withoutBatchEvents,
            v.leftoversWritten,
            rep,
            cfg,
            (order.indexOf(slotOf(v)) * cfg.gapMs) / slots.length,
          ),
        ),
      );
      out.push(...runs);
    } finally {
      await Promise.all(fleet.map(({ f }) => stopFleetApp(env, f)));
    }
    // After the warm apps have stopped: the broker's counts are the cold instances' alone.
    if (designs.includes('pushdrain')) out.push(await trickleCold(env, rep, cfg, random));
  }
  return out;
}

/** One batch's cold instances: HTTP only, then one per Service Bus trigger, as Flex scales them. */
const COLD_INSTANCES: readonly (readonly PushdrainTrigger[])[] = [[], ['drain'], ['aggregate'], ['scaleAgent']];

/** Sums meter snapshots by operation. */
function sum(snapshots: readonly MeterSnapshot[]): MeterSnapshot {
  const out: MeterSnapshot = {};
  for (const snap of snapshots) for (const [k, v] of Object.entries(snap)) out[k] = (out[k] ?? 0) + v;
  return out;
}

/** pushdrain cold: every batch through fresh instances, started for it and stopped once quiet. */
async function trickleCold(env: BenchEnv, rep: number, cfg: TrickleConfig, random: () => number): Promise<TrickleRun> {
  const prefix = freshPrefix('pushdrain');
  const topic = env.takeTopic();
  const direct = appSettings({ storage: env.azurite.connectionString }, prefix);
  const wire = await startCountingProxy(env.azurite);
  const watcher = new CompletionWatcher(direct);
  const size = cfg.batchSize.pushdrain;
  const start = (functions: readonly PushdrainTrigger[]): ReturnType<typeof startPushdrain> =>
    startPushdrain({
      prefix,
      storage: wire.connectionString,
      serviceBus: { connectionString: env.broker.connectionString, topic },
      random,
      functions,
    });
  /** One batch through a fresh group; resolves with its latency once every instance has stopped. */
  const serve = async (body: Buffer, meters: { kind: string; storage: MeterSnapshot }[]): Promise<number> => {
    const group = COLD_INSTANCES.map(start);
    try {
      const submitted = Date.now();
      const [done] = await watcher.wait([await group[0]!.submit(body)], BATCH_TIMEOUT_MS);
      // Scale-in takes an instance once it is idle: each one's drains and back-off run out first.
      await Promise.all(group.map((app) => untilQuiet(app, cfg.quietMs, 60_000)));
      return done!.completedAt - submitted;
    } finally {
      await Promise.all(group.map((app) => app.stop()));
      meters.push(...group.map((app, i) => ({ kind: COLD_INSTANCES[i]![0] ?? 'http', storage: app.meter.snapshot() })));
    }
  };
  try {
    await provisionStorage(direct); // infra/'s part: not the app's requests
    // Warm-up, uncounted: what a deployment pays once (each queue's first drain slot), not per instance.
    const { partitions, chunkSize } = direct.tuning;
    await serve(batchBody({ count: partitions * Math.min(chunkSize, CHUNK_PIECE), seed: SEED_BASE - 1 }), []);
    const wire0 = wire.snapshot();
    const broker0 = env.broker.stats();
    const meters: { kind: string; storage: MeterSnapshot }[] = [];
    const latenciesMs: number[] = [];
    const t0 = Date.now();
    for (let i = 0; i < cfg.batches; i++) {
      await sleep(t0 + i * cfg.gapMs - Date.now());
      latenciesMs.push(await serve(batchBody({ count: size, seed: SEED_BASE + i }), meters));
    }
    const storage = sum(meters.map((m) => m.storage));
    const kinds = [...new Set(meters.map((m) => m.kind))];
    const byInstance = Object.fromEntries(
      kinds.map((k) => [k, sum(meters.filter((m) => m.kind === k).map((m) => m.storage))]),
    );
    const atWire = meterDelta(wire.snapshot(), wire0);
    wireChecks.push(checkWire('pushdrain', `${prefix} (cold)`, storage, atWire));
    return {
      design: 'pushdrain',
      cold: true,
      instances: meters.length,
      byInstance,
      rep,
      batches: cfg.batches,
      transactions: size * cfg.batches,
      windowMs: Date.now() - t0,
      storage,
      wire: atWire,
      afterWindow: 0,
      serviceBusOperations: serviceBusOperations(statsDelta(env.broker.stats(), broker0)),
      latenciesMs,
    };
  } finally {
    await watcher.close();
    await wire.close();
    await removeApp(env.admin, prefix);
  }
}
