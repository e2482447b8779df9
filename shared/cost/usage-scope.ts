/**
 * Which batch the work running now is for: an AsyncLocalStorage scope around each unit of work
 * (an ingest, a chunk's map, a result's fold, a drain invocation), so that the Storage meter,
 * which only sees requests, can charge each request to its batch (usage-ledger.ts).
 *
 * Scopes nest. A drain invocation's scope is charged to the batch its event named and then to
 * the last batch it served ("sticky"): its receives, deletes, slot leases and the empty receives
 * of its wind-down are what serving that batch cost. An ingest learns its batch id only after
 * reading the body: what it counts before that is held in its scope and charged once it is known.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

import type { CostStage } from './batch-usage';
import { CpuShare } from './cpu-share';

/** Where a scope's counts go (the UsageLedger). */
export interface UsageSink {
  chargeStorage(batchId: string, op: string, n: number): void;
  chargeCpu(batchId: string, stage: CostStage, ms: number): void;
}

export interface UsageScope {
  sink: UsageSink;
  batchId: string | undefined;
  /** A unit of work whose CPU time is measured; a drain invocation has none. */
  stage: CostStage | undefined;
  /** The enclosing scope, which a nested unit makes sticky to its batch. */
  parent: UsageScope | undefined;
  /** Storage counted before the batch id was known, by operation. */
  held: Map<string, number>;
  /** Around the manifest write that carries the batch's usage: that write was counted in advance. */
  carried: boolean;
  /** What it counts waits for the batch's next write and never asks for one (the scaling agent's reads). */
  ridesAlong?: boolean;
}

const storage = new AsyncLocalStorage<UsageScope>();

/** One per process: the process's CPU clock is one. */
const cpu = new CpuShare<UsageScope>((s, ms) => {
  if (s.batchId !== undefined && s.stage) s.sink.chargeCpu(s.batchId, s.stage, ms);
});

export function currentScope(): UsageScope | undefined {
  return storage.getStore();
}

/** Shares out the CPU used so far among the units running (before their usage is read). */
export function tickCpu(): void {
  cpu.tick();
}

/** A root scope (a request, an invocation, a flush): it charges to `sink`. */
export function inUsageScope<T>(
  sink: UsageSink,
  batchId: string | undefined,
  stage: CostStage | undefined,
  work: () => Promise<T>,
  ridesAlong = false,
): Promise<T> {
  return enter({ sink, batchId, stage, parent: undefined, held: new Map(), carried: false, ridesAlong }, work);
}

/**
 * A unit of work for `batchId` (undefined: learnt later, by attributeTo) inside the running
 * scope, which it makes sticky to that batch; outside any scope, just `work`.
 */
export function withBatch<T>(batchId: string | undefined, stage: CostStage, work: () => Promise<T>): Promise<T> {
  const parent = storage.getStore();
  if (!parent) return work();
  if (batchId !== undefined) parent.batchId = batchId;
  return enter({ sink: parent.sink, batchId, stage, parent, held: new Map(), carried: false }, work);
}

/** The running scope's batch is now known: what it held is charged to it. */
export function attributeTo(batchId: string): void {
  const scope = storage.getStore();
  if (!scope) return;
  scope.batchId = batchId;
  for (const [op, n] of scope.held) scope.sink.chargeStorage(batchId, op, n);
  scope.held.clear();
}

/** Runs `work` so that nothing it meters is charged: the write carrying the usage counted itself. */
export function carriedWrite<T>(work: () => Promise<T>): Promise<T> {
  const cur = storage.getStore();
  if (!cur) return work();
  return storage.run({ ...cur, stage: undefined, parent: cur, held: new Map(), carried: true }, work);
}

async function enter<T>(scope: UsageScope, work: () => Promise<T>): Promise<T> {
  return storage.run(scope, async () => {
    if (!scope.stage) return work();
    cpu.start(scope);
    try {
      return await work();
    } finally {
      cpu.end(scope);
    }
  });
}
