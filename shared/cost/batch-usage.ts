/**
 * What a batch used, as kept on its manifest (`usage`): Storage requests by operation (the
 * meter's names), Service Bus operations, and CPU time by stage. Counts only grow; each write of
 * the manifest adds what this process metered for the batch since its last write (usage-ledger.ts).
 */
export type CostStage = 'ingest' | 'map' | 'reduce';

export interface BatchUsage {
  /** Storage requests by operation (`blob.put`, `queue.get`, …), as the meter names them. */
  storage: Record<string, number>;
  /** Service Bus operations: events sent, and events received and settled by the triggers. */
  serviceBus: number;
  /** CPU time in ms by stage, the process's CPU shared among the units of work running (cpu-share.ts). */
  cpuMs: Record<CostStage, number>;
}

export function emptyUsage(): BatchUsage {
  return { storage: {}, serviceBus: 0, cpuMs: { ingest: 0, map: 0, reduce: 0 } };
}

/** a + b, as a new object (either may be absent: a manifest written before usage was kept). */
export function addUsage(a: BatchUsage | undefined, b: BatchUsage | undefined): BatchUsage {
  const out = emptyUsage();
  for (const u of [a, b]) {
    if (!u) continue;
    for (const [op, n] of Object.entries(u.storage)) out.storage[op] = (out.storage[op] ?? 0) + n;
    out.serviceBus += u.serviceBus;
    for (const s of ['ingest', 'map', 'reduce'] as const) out.cpuMs[s] = round3(out.cpuMs[s] + (u.cpuMs[s] ?? 0));
  }
  return out;
}

export function storageTotal(u: BatchUsage): number {
  let t = 0;
  for (const n of Object.values(u.storage)) t += n;
  return t;
}

export function isEmptyUsage(u: BatchUsage): boolean {
  return storageTotal(u) === 0 && u.serviceBus === 0 && u.cpuMs.ingest + u.cpuMs.map + u.cpuMs.reduce === 0;
}

/** CPU ms to the microsecond: the manifest stays small and readable. */
function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
