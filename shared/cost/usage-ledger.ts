/**
 * The one owner of per-batch usage in this process: what was metered for each batch and is not
 * yet on its manifest. Each manifest write takes the batch's pending usage and adds it to the
 * manifest it writes (manifest-store.ts), so a count reaches the manifest at most once: a crash
 * loses what was pending (an undercount the wire still shows), never counts it twice. Usage left
 * after a batch's last write (its terminal write, the deletes and empty receives after it) is
 * flushed by one more write once the batch has been still for a while, in its own scope.
 *
 * The write that carries the usage counts itself in advance (+1 `blob.put`) and is metered for
 * no batch; if it fails, the usage goes back with that +1 (a refused write is billed too).
 */
import { addUsage, type BatchUsage, type CostStage, emptyUsage, isEmptyUsage, storageTotal } from './batch-usage';
import { carriedWrite, currentScope, inUsageScope, tickCpu, type UsageSink } from './usage-scope';

/**
 * Batches with usage held at most: CPU time and the scaling agent's reads wait for a write that may
 * never come (the batch was done), so past this the oldest are dropped (an undercount, bounded memory).
 */
const MAX_PENDING_BATCHES = 10_000;

/** The storage operation of a manifest write (meter.ts's name for a blob PUT). */
const MANIFEST_WRITE = 'blob.put';

/** Service Bus operations of an event a trigger ran for: its receive and its completion. */
const RECEIVE_AND_COMPLETE = 2;

/** The part the manifest store uses: the usage its write carries. */
export type UsageCarrier = Pick<UsageLedger, 'take' | 'giveBack' | 'carry'>;

export class UsageLedger implements UsageSink {
  private readonly pending = new Map<string, BatchUsage>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private flusher: ((batchId: string) => Promise<unknown>) | undefined;
  private closed = false;

  /** @param flushAfterMs how long a batch's usage may wait for a manifest write before one is made for it. */
  constructor(private readonly flushAfterMs: number) {}

  /** How a batch's leftover usage is written: a manifest write that changes nothing else. */
  flushWith(flush: (batchId: string) => Promise<unknown>): void {
    this.flusher = flush;
  }

  /**
   * Runs a request or invocation in a root scope for `batchId` (undefined: none yet). `ridesAlong`:
   * what it counts waits for the batch's next write, and never asks for one of its own.
   */
  run<T>(
    batchId: string | undefined,
    stage: CostStage | undefined,
    work: () => Promise<T>,
    ridesAlong = false,
  ): Promise<T> {
    return inUsageScope(this, batchId, stage, work, ridesAlong);
  }

  /**
   * Runs a trigger's invocation in a root scope for the batch its event names, charged the event's
   * receive and completion (two Service Bus operations).
   */
  runTriggered<T>(batchId: string | undefined, work: () => Promise<T>, ridesAlong = false): Promise<T> {
    return this.run(
      batchId,
      undefined,
      () => {
        this.countServiceBus(RECEIVE_AND_COMPLETE);
        return work();
      },
      ridesAlong,
    );
  }

  /** The meter's listener: one Storage request, charged to the running scope's batch. */
  countStorage(op: string, n: number): void {
    const scope = currentScope();
    if (!scope || scope.carried || scope.sink !== this) return;
    if (scope.batchId === undefined) scope.held.set(op, (scope.held.get(op) ?? 0) + n);
    else this.add(scope.batchId, (u) => (u.storage[op] = (u.storage[op] ?? 0) + n), !scope.ridesAlong);
  }

  /** Service Bus operations for the running scope's batch. */
  countServiceBus(n: number): void {
    const scope = currentScope();
    if (scope?.batchId !== undefined && n > 0 && scope.sink === this)
      this.add(scope.batchId, (u) => (u.serviceBus += n), !scope.ridesAlong);
  }

  chargeStorage(batchId: string, op: string, n: number): void {
    this.add(batchId, (u) => (u.storage[op] = (u.storage[op] ?? 0) + n));
  }

  /** CPU time rides along with the batch's next write: it alone never asks for one. */
  chargeCpu(batchId: string, stage: CostStage, ms: number): void {
    this.add(batchId, (u) => (u.cpuMs[stage] += ms), false);
  }

  /** The usage to add to the manifest being written (that write included); undefined when none. */
  take(batchId: string): BatchUsage | undefined {
    tickCpu();
    const u = this.pending.get(batchId);
    this.pending.delete(batchId);
    this.clearTimer(batchId);
    if (!u || isEmptyUsage(u)) return undefined;
    u.storage[MANIFEST_WRITE] = (u.storage[MANIFEST_WRITE] ?? 0) + 1;
    return u;
  }

  /** A write that carried `u` failed: it is pending again, the refused write with it (it was billed). */
  giveBack(batchId: string, u: BatchUsage): void {
    this.add(batchId, (p) => Object.assign(p, addUsage(p, u)));
  }

  /** Runs the write that carries a batch's usage: counted by take, not by the meter. */
  carry<T>(write: () => Promise<T>): Promise<T> {
    return carriedWrite(write);
  }

  /** Usage metered for a batch and not yet on its manifest (status pages add it to the manifest's). */
  pendingOf(batchId: string): BatchUsage | undefined {
    return this.pending.get(batchId);
  }

  /**
   * Writes the running scope's batch's leftover usage now: a drain invocation that has ended (its
   * tasks gone, its slot released) has nothing more to add, so its batch need not wait for the timer.
   */
  async flushCurrent(): Promise<void> {
    const batchId = currentScope()?.batchId;
    const u = batchId === undefined ? undefined : this.pending.get(batchId);
    if (batchId !== undefined && u && (storageTotal(u) > 0 || u.serviceBus > 0)) await this.flush(batchId);
  }

  /** Writes every batch's leftover Storage and Service Bus usage now (shutdown, the bench); CPU time alone waits. */
  async flushAll(): Promise<void> {
    const due = [...this.pending].filter(([, u]) => storageTotal(u) > 0 || u.serviceBus > 0).map(([b]) => b);
    await Promise.all(due.map((b) => this.flush(b)));
  }

  /** No more timed flushes (the app is closing). */
  close(): void {
    this.closed = true;
    for (const b of [...this.timers.keys()]) this.clearTimer(b);
  }

  private add(batchId: string, change: (u: BatchUsage) => void, flush = true): void {
    let u = this.pending.get(batchId);
    if (!u) {
      this.pending.set(batchId, (u = emptyUsage()));
      if (this.pending.size > MAX_PENDING_BATCHES) this.drop(this.pending.keys().next().value as string);
    }
    change(u);
    if (!flush || this.closed || !this.flusher || this.timers.has(batchId)) return;
    // Not a poller: one timer per batch with usage pending, gone once that is written.
    const t = setTimeout(() => {
      this.timers.delete(batchId);
      void this.flush(batchId);
    }, this.flushAfterMs);
    t.unref();
    this.timers.set(batchId, t);
  }

  private async flush(batchId: string): Promise<void> {
    const flusher = this.flusher;
    const before = this.pending.get(batchId);
    if (!flusher || !before) return;
    // In the batch's own root scope: a read before the write is charged to it, and carried by it.
    await this.run(batchId, undefined, () => flusher(batchId)).catch(() => undefined);
    // Not taken (no manifest to write, or the write failed): dropped, so a flush never re-arms itself.
    if (this.pending.get(batchId) !== before) return;
    this.pending.delete(batchId);
    this.clearTimer(batchId);
  }

  private drop(batchId: string): void {
    this.pending.delete(batchId);
    this.clearTimer(batchId);
  }

  private clearTimer(batchId: string): void {
    const t = this.timers.get(batchId);
    if (t) clearTimeout(t);
    this.timers.delete(batchId);
  }
}
