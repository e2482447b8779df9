/**
 * What makes the broker's acknowledgements mean "durable". Every state change is appended as
 * an operation; every reply a client can see (a send's or a settlement's outcome, a delivery, a
 * management reply) waits in `afterDurable` until what came before it is on disk. Memory
 * changes at once; only what leaves the broker waits, so a crash loses exactly what no client
 * was told about.
 *
 * The durable journal commits in groups: appends made while a write and fsync are in flight
 * wait for the next one, so concurrent clients share an fsync instead of queueing for their own.
 */
import { closeSync, fdatasync, openSync, write } from 'node:fs';

import { encodeOps, frameRecord, type JournalOp } from './journal-codec';
import { type Segments, writeSegment } from './journal-segments';

export interface Journal {
  /** Appends what `make` returns; the in-memory journal never calls it (no encoding cost). */
  append(make: () => JournalOp): void;
  /** Runs `fn` once every operation appended so far is durable (at once when nothing waits). */
  afterDurable(fn: () => void): void;
  close(): Promise<void>;
}

export interface JournalStats {
  /** Bytes in the current segment file. */
  bytes: number;
  /** Bytes written since start-up, snapshots included. */
  written: number;
  /** Group commits (each one write and one fsync). */
  commits: number;
  operations: number;
  compactions: number;
  /** Segment generation (rises with each compaction). */
  generation: number;
}

/** The in-memory broker: nothing to wait for. */
class MemoryJournal implements Journal {
  append(): void {}
  afterDurable(fn: () => void): void {
    fn();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The registry's journal: in memory while start-up restores the state, then the durable one. */
export class JournalSwitch implements Journal {
  private target: Journal = new MemoryJournal();

  use(journal: Journal): void {
    this.target = journal;
  }
  append(make: () => JournalOp): void {
    this.target.append(make);
  }
  afterDurable(fn: () => void): void {
    this.target.afterDurable(fn);
  }
  close(): Promise<void> {
    return this.target.close();
  }
}

interface Batch {
  ops: JournalOp[];
  waiters: (() => void)[];
}

export interface DurableJournalOptions {
  segments: Segments;
  /** Current state as operations, for a compaction. */
  snapshot: () => JournalOp[];
  /** Compact once the segment passes this size (or twice the last snapshot, if larger). */
  compactAtBytes: number;
  onFatal: (err: Error) => void;
}

export class DurableJournal implements Journal {
  private pending: Batch = { ops: [], waiters: [] };
  private inFlight: Batch | undefined;
  private running: Promise<void> | undefined;
  private fd: number;
  private failed: Error | undefined;
  private closed = false;
  private snapshotBytes: number;
  private readonly counts: JournalStats;

  constructor(private readonly options: DurableJournalOptions) {
    const seg = options.segments;
    this.fd = openSync(seg.path(seg.generation), 'a');
    this.snapshotBytes = seg.bytes;
    this.counts = {
      bytes: seg.bytes,
      written: 0,
      commits: 0,
      operations: 0,
      compactions: 0,
      generation: seg.generation,
    };
  }

  append(make: () => JournalOp): void {
    if (this.closed || this.failed) return;
    this.pending.ops.push(make());
    this.counts.operations++;
    this.running ??= this.run();
  }

  afterDurable(fn: () => void): void {
    if (this.failed) return; // never acknowledge what may not be on disk
    if (this.pending.ops.length > 0) this.pending.waiters.push(fn);
    else if (this.inFlight) this.inFlight.waiters.push(fn);
    else fn();
  }

  stats(): JournalStats {
    return { ...this.counts };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.running;
    closeSync(this.fd);
    this.options.segments.unlock();
  }

  private async run(): Promise<void> {
    // One tick's appends (a whole batch transfer, a fan-out) join the first commit.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.pending.ops.length > 0 && !this.failed) {
        const batch = this.pending;
        this.pending = { ops: [], waiters: [] };
        this.inFlight = batch;
        if (this.counts.bytes > Math.max(this.options.compactAtBytes, 2 * this.snapshotBytes)) await this.compact();
        else await this.commit(frameRecord(encodeOps(batch.ops)));
        this.inFlight = undefined;
        for (const fn of batch.waiters) fn();
      }
    } catch (e) {
      this.failed = e instanceof Error ? e : new Error(String(e));
      this.options.onFatal(this.failed);
    } finally {
      this.inFlight = undefined;
      this.running = undefined;
    }
  }

  private async commit(record: Buffer): Promise<void> {
    for (let at = 0; at < record.length;) {
      at += await new Promise<number>((resolve, reject) =>
        write(this.fd, record, at, record.length - at, null, (err, n) => (err ? reject(err) : resolve(n))),
      );
    }
    await new Promise<void>((resolve, reject) => fdatasync(this.fd, (err) => (err ? reject(err) : resolve())));
    this.counts.bytes += record.length;
    this.counts.written += record.length;
    this.counts.commits++;
  }

  /** A new segment holding the current state (which includes the batch in flight), then the old one goes. */
  private async compact(): Promise<void> {
    const seg = this.options.segments;
    const generation = seg.generation + 1;
    const bytes = await writeSegment(seg, generation, this.options.snapshot());
    const old = this.fd;
    this.fd = openSync(seg.path(generation), 'a');
    closeSync(old);
    seg.retire(generation);
    this.snapshotBytes = bytes;
    const c = this.counts;
    Object.assign(c, {
      bytes,
      generation,
      written: c.written + bytes,
      compactions: c.compactions + 1,
      commits: c.commits + 1,
    });
  }
}
