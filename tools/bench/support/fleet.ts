/** Starting and stopping groups of apps with unique names, and the little waits scenarios share. */
import { batchCost } from '../../../shared/cost/batch-cost';
import { storageTotal } from '../../../shared/cost/batch-usage';
import { meterDelta, type MeterSnapshot } from '../../../shared/storage/meter';
import type { BenchApp, DesignName } from '../app';
import { startApp } from '../designs';
import { CompletionWatcher } from './completion';
import { type CountingProxy, startCountingProxy } from './counting-proxy';
import { appSettings, type BenchEnv, removeApp } from './env';
import { problems } from './log';

const SHORT: Record<DesignName, string> = {
  pushdrain: 'pd',
  'classic-poller': 'cp',
  'functions-queue': 'fq',
  'no-claim-check': 'nc',
};

let counter = 0;
const runTag = Date.now().toString(36).slice(-5);

/** A fresh name prefix: queue and container names of different apps never collide. */
export function freshPrefix(design: DesignName): string {
  return `b${runTag}-${SHORT[design]}${++counter}-`;
}

export interface FleetApp {
  app: BenchApp;
  watcher: CompletionWatcher;
  prefix: string;
  topic?: string;
  /**
   * pushdrain: its Storage traffic goes through this counting proxy, an independent count at the
   * wire of every request (Azure bills each one) beside the app's own meter.
   */
  wire?: CountingProxy;
}

/** An app's storage over its life, by its meter and at the wire; they must be equal. */
export interface WireCheck {
  design: DesignName;
  prefix: string;
  meter: MeterSnapshot;
  wire: MeterSnapshot;
  equal: boolean;
}

/** Every pushdrain app's lifetime check of this process, in the order the apps stopped. */
export const wireChecks: WireCheck[] = [];

/**
 * A window's batches against the wire: the Storage requests their manifests say were theirs
 * (the live meter's attribution, shared/cost/) summed, and what the wire carried in the same window.
 */
export interface AttributionCheck {
  scenario: string;
  design: DesignName;
  prefix: string;
  batches: number;
  /** Batches whose manifest has no usage (each is also a difference). */
  withoutUsage: number;
  perBatch: number;
  wire: number;
  /** |perBatch − wire| ≤ ATTRIBUTION_TOLERANCE × wire. */
  within: boolean;
  /** The batches' estimated cost per 1,000 transactions at the app's list prices, in USD. */
  usdPer1000: number;
}

/** How far the batches' sum may be from the wire: 1 %. */
const ATTRIBUTION_TOLERANCE = 0.01;

/** Every attribution check of this process, in order. */
export const attributionChecks: AttributionCheck[] = [];

/**
 * Reads the batches' usage from their manifests (through the watcher: not the app's traffic) once
 * the app has written all of it, and holds its Storage sum against `wire`, the wire's count over
 * the window that holds every request of those batches. A difference past 1 % is a bench warning.
 */
export async function checkAttribution(
  scenario: string,
  f: FleetApp,
  batchIds: readonly string[],
  wire: number,
): Promise<AttributionCheck> {
  const got = await f.watcher.usage(batchIds);
  let perBatch = 0;
  let usd = 0;
  let transactions = 0;
  for (const { usage, transactions: n } of got) {
    transactions += n;
    if (!usage) continue;
    perBatch += storageTotal(usage);
    usd += batchCost(usage, n, f.app.settings.prices).estimate.perBatch;
  }
  const within = Math.abs(perBatch - wire) <= ATTRIBUTION_TOLERANCE * wire;
  const check: AttributionCheck = {
    scenario,
    design: f.app.design,
    prefix: f.prefix,
    batches: batchIds.length,
    withoutUsage: got.filter((g) => !g.usage).length,
    perBatch,
    wire,
    within,
    usdPer1000: transactions > 0 ? (usd * 1000) / transactions : 0,
  };
  if (!within)
    problems.push(
      `attribution: ${scenario} ${f.prefix}: the batches' Storage counts sum to ${perBatch}, the wire counted ${wire} (more than 1 % apart)`,
    );
  attributionChecks.push(check);
  return check;
}

export interface StartOptions {
  idleMs?: number;
  random?: () => number;
  meter?: BenchApp['meter'];
  settings?: Record<string, string>;
  withoutBatchEvents?: boolean;
}

export async function startFleetApp(env: BenchEnv, design: DesignName, options: StartOptions = {}): Promise<FleetApp> {
  const prefix = freshPrefix(design);
  const pd = design === 'pushdrain';
  const topic = pd ? env.takeTopic() : undefined;
  const wire = pd ? await startCountingProxy(env.azurite) : undefined;
  try {
    const app = await startApp(design, {
      prefix,
      storage: wire?.connectionString ?? env.azurite.connectionString,
      provisionVia: env.azurite.connectionString,
      ...(topic ? { serviceBus: { connectionString: env.broker.connectionString, topic } } : {}),
      ...options,
    });
    // The watcher reads straight from Azurite: what watching costs is not the app's.
    const watcher = new CompletionWatcher(
      appSettings({ storage: env.azurite.connectionString }, prefix, options.settings),
    );
    return { app, watcher, prefix, ...(topic ? { topic } : {}), ...(wire ? { wire } : {}) };
  } catch (e) {
    await wire?.close();
    throw e;
  }
}

export async function stopFleetApp(env: BenchEnv, f: FleetApp): Promise<void> {
  try {
    await f.app.stop();
    await f.watcher.close();
  } finally {
    if (f.wire) {
      // Stopped: every request the app sent has been answered, so both counts are final.
      wireChecks.push(checkWire(f.app.design, f.prefix, f.app.meter.snapshot(), f.wire.snapshot()));
      await f.wire.close();
    }
  }
  await removeApp(env.admin, f.prefix);
}

/** Compares a meter with the wire; a difference is also a bench warning, by operation. */
export function checkWire(design: DesignName, prefix: string, meter: MeterSnapshot, wire: MeterSnapshot): WireCheck {
  const diff = meterDelta(wire, meter);
  for (const k of Object.keys(meter)) if (!(k in wire)) diff[k] = -(meter[k] ?? 0);
  const equal = Object.keys(diff).length === 0;
  if (!equal) problems.push(`wire: ${design} ${prefix}: the wire minus the meter is ${JSON.stringify(diff)}`);
  return { design, prefix, meter, wire, equal };
}

/**
 * The app's meter and the wire read together at a moment when no request the meter counted is
 * still on its way (the meter counts a request before sending it, the wire when it arrives), so
 * the two must be equal; on a busy machine such a moment may take a while. Bounded by maxMs: past
 * it, the counts are read as they are, and a request in flight then shows as a difference.
 */
export async function settledCounts(
  f: FleetApp,
  maxMs = 30_000,
): Promise<{ meter: MeterSnapshot; wire: MeterSnapshot | undefined }> {
  const until = Date.now() + maxMs;
  while (f.app.meter.inFlight() > 0 && Date.now() < until) await sleep(5);
  return { meter: f.app.meter.snapshot(), wire: f.wire?.snapshot() };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Waits until an app's storage meter has not moved for `quietMs` (its drains or back-off have
 * run out), at most `maxMs`. Returns how long that took.
 */
export async function untilQuiet(app: BenchApp, quietMs: number, maxMs: number): Promise<number> {
  const start = Date.now();
  let last = app.meter.total();
  let since = Date.now();
  // Bounded by maxMs; checks every 100 ms.
  while (Date.now() - start < maxMs) {
    await sleep(100);
    const now = app.meter.total();
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) break;
  }
  return Date.now() - start;
}
