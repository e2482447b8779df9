/**
 * What this instance did, in time buckets, kept in memory for the status page: Storage
 * requests (from the meter, as they happen), business transactions and chunks billed,
 * transactions accepted, drains running, whether any work was in flight, and queue depths as
 * the app read them anyway (a drain's own depth reads, a status report). Recording costs no
 * request, and happens whether or not anyone watches; an hour of 10 s buckets is a few kilobytes.
 */
import type { MessageProcessor, QueueMessage } from '../ports';

export interface HistoryPoint {
  /** Bucket start, epoch ms. */
  at: number;
  /** Storage requests of the app (the status report's own are metered apart). */
  storage: number;
  /** Business transactions billed (map step) in this bucket. */
  billed: number;
  /** Chunks (input queue messages) billed in this bucket. */
  chunks: number;
  /** Business transactions accepted (ingest) in this bucket. */
  accepted: number;
  /** Most drains running at once in this bucket. */
  drains: number;
  /** Whether any work (a façade call: ingest, drain, sweep that found work, start-up, …) was in flight, began or ended in this bucket. */
  busy: boolean;
  /** The deepest each queue was seen in this bucket, by the app's own depth reads (a drain's) or a status report (absent when nothing read it). */
  depths?: Record<string, number>;
}

export interface ActivityWindow {
  seconds: number;
  storageTransactions: number;
  businessTransactions: number;
  /** Storage transactions per 1,000 business transactions billed; null with nothing billed. */
  perThousand: number | null;
  /** Seconds of buckets with no work in flight (see HistoryPoint.busy), no drain running and nothing billed or accepted. */
  idleSeconds: number;
  idleStorageTransactions: number;
  /**
   * Idle Storage transactions extrapolated to an hour; null until there are `idleRateAfterSeconds`
   * of idle time: a rate from a minute or two of idle right after work is the tail of that work
   * (a drain's last re-check, a delivery settling) scaled up sixty-fold, not what an idle app costs.
   */
  idlePerHour: number | null;
  /** The idle time `idlePerHour` waits for; until then show the count and the idle time instead. */
  idleRateAfterSeconds: number;
}

/** Two sweep runs at the default 5-minute schedule: enough idle time for an hourly rate to mean something. */
const IDLE_RATE_AFTER_MS = 600_000;

export interface ActivityOptions {
  /** @defaultValue 10000 */
  bucketMs?: number;
  /** Buckets kept. @defaultValue 360 (an hour of 10 s buckets) */
  buckets?: number;
}

export class Activity {
  readonly bucketMs: number;
  private readonly keep: number;
  private readonly points: HistoryPoint[] = [];
  private running = 0;
  /** Units of work in flight now (see during()), and since when there has been any. */
  private inFlight = 0;
  private busySince = 0;
  /** When work was in flight, oldest first; spans less than a bucket apart are merged, so at most one per bucket. */
  private readonly spans: { from: number; to: number }[] = [];
  readonly startedAt: number;

  constructor(
    private readonly now: () => number,
    options: ActivityOptions = {},
  ) {
    this.bucketMs = options.bucketMs ?? 10_000;
    this.keep = options.buckets ?? 360;
    this.startedAt = now();
  }

  storage(n = 1): void {
    this.current().storage += n;
  }

  billed(transactions: number): void {
    this.current().billed += transactions;
  }

  accepted(transactions: number): void {
    this.current().accepted += transactions;
  }

  /** Drains running in this instance now. */
  drains(running: number): void {
    this.running = running;
    const b = this.current();
    b.drains = Math.max(b.drains, running);
  }

  /**
   * Runs one unit of work, counting it as in flight: the buckets it touches are not idle, so
   * start-up and the tail of a batch never pass for what an idle app costs.
   */
  async during<T>(work: () => Promise<T>): Promise<T> {
    if (this.inFlight++ === 0) this.busySince = this.now();
    try {
      return await work();
    } finally {
      if (--this.inFlight === 0) this.span(this.busySince, this.now());
    }
  }

  /** Marks now as working (work found after the fact, e.g. by a sweep). */
  worked(): void {
    const t = this.now();
    this.span(t, t);
  }

  /** Peaks per bucket: a backlog that came and went between two looks still shows. */
  depths(byQueue: Record<string, number>): void {
    const b = this.current();
    const seen = b.depths ?? {};
    for (const [q, d] of Object.entries(byQueue)) seen[q] = Math.max(seen[q] ?? 0, d);
    b.depths = seen;
  }

  /** Every bucket from the oldest kept to now, empty ones included. */
  history(): HistoryPoint[] {
    this.current();
    const out: HistoryPoint[] = [];
    const first = this.points[0];
    if (!first) return out;
    const last = this.bucketStart(this.now());
    const byAt = new Map(this.points.map((p) => [p.at, p]));
    for (let at = Math.max(first.at, last - (this.keep - 1) * this.bucketMs); at <= last; at += this.bucketMs) {
      const p = byAt.get(at);
      out.push(
        p
          ? { ...p, busy: this.busyIn(at) }
          : { at, storage: 0, billed: 0, chunks: 0, accepted: 0, drains: 0, busy: this.busyIn(at) },
      );
    }
    return out;
  }

  /** Totals over the last `seconds` (bounded by what is kept and by this instance's uptime). */
  window(seconds: number): ActivityWindow {
    const now = this.now();
    const from = Math.max(now - seconds * 1000, this.startedAt);
    const points = this.history().filter((p) => p.at + this.bucketMs > from);
    let storage = 0;
    let billed = 0;
    let idleMs = 0;
    let idleStorage = 0;
    for (const p of points) {
      storage += p.storage;
      billed += p.billed;
      // A bucket's covered span: the start of the window or of the bucket, to now or its end.
      const span = Math.max(0, Math.min(p.at + this.bucketMs, now) - Math.max(p.at, from));
      if (!p.busy && p.drains === 0 && p.billed === 0 && p.accepted === 0) {
        idleMs += span;
        idleStorage += p.storage;
      }
    }
    const covered = Math.max(0, now - from);
    return {
      seconds: Math.round(covered / 1000),
      storageTransactions: storage,
      businessTransactions: billed,
      perThousand: billed > 0 ? round1((storage / billed) * 1000) : null,
      idleSeconds: Math.round(idleMs / 1000),
      idleStorageTransactions: idleStorage,
      idlePerHour: idleMs >= IDLE_RATE_AFTER_MS ? round1((idleStorage / idleMs) * 3_600_000) : null,
      idleRateAfterSeconds: IDLE_RATE_AFTER_MS / 1000,
    };
  }

  /** Wraps the map processor: each processed pointer is a chunk billed, with its transaction count. */
  countingBilled(inner: MessageProcessor, countOf: (m: QueueMessage) => number): MessageProcessor {
    return {
      process: async (m) => {
        await inner.process(m);
        this.billed(countOf(m));
        this.current().chunks++;
      },
      ...(inner.afterBatch ? { afterBatch: inner.afterBatch.bind(inner) } : {}),
      ...(inner.onPoison ? { onPoison: inner.onPoison.bind(inner) } : {}),
    };
  }

  private span(from: number, to: number): void {
    const last = this.spans[this.spans.length - 1];
    if (last && from - last.to < this.bucketMs) last.to = Math.max(last.to, to);
    else this.spans.push({ from, to });
    const oldest = to - this.keep * this.bucketMs;
    while ((this.spans[0]?.to ?? Infinity) < oldest) this.spans.shift();
  }

  /** Whether work was in flight at any moment of the bucket starting at `at` (work running now included). */
  private busyIn(at: number): boolean {
    const end = at + this.bucketMs;
    if (this.inFlight > 0 && this.busySince < end) return true;
    return this.spans.some((s) => s.from < end && s.to >= at);
  }

  private bucketStart(t: number): number {
    return t - (t % this.bucketMs);
  }

  private current(): HistoryPoint {
    const at = this.bucketStart(this.now());
    const last = this.points[this.points.length - 1];
    if (last?.at === at) return last;
    // A drain or other work running across the boundary counts in the new bucket too.
    const b: HistoryPoint = { at, storage: 0, billed: 0, chunks: 0, accepted: 0, drains: this.running, busy: false };
    this.points.push(b);
    if (this.points.length > this.keep) this.points.splice(0, this.points.length - this.keep);
    return b;
  }
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
