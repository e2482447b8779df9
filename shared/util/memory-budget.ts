import { totalmem } from 'node:os';

/**
 * Bytes of work a process holds at once, shared by everything in it that holds a batch's data.
 * A drain task receives up to a receive batch of chunks and maps them all at once, and several
 * drains share one process: without a bound, one instance held a whole 1,000,000-transaction
 * batch decoded at the same time. Reservations are granted in order, so a big one is not passed
 * over for ever by small ones; one bigger than the whole budget runs alone.
 */
/** The share of an instance's memory that batch data may take; the rest is the runtime, the app and the GC's slack. */
const WORK_SHARE = 0.25;

/** What GET /api/health shows of the budget. */
export interface MemoryBudgetSnapshot {
  limitBytes: number;
  inUseBytes: number;
  /** The most held at once since the process started. */
  peakBytes: number;
  /** Reservations that had to wait for room. */
  waits: number;
  /** Reservations refused because there was no room (an ingest answered 503). */
  refused: number;
}

export class MemoryBudget {
  private used = 0;
  private peak = 0;
  private waits = 0;
  private refused = 0;
  private readonly waiting: { bytes: number; grant: (release: () => void) => void }[] = [];

  /** `whole`: the budget this one is a part of; each reservation here holds room in both. */
  constructor(
    readonly limitBytes: number,
    private readonly whole?: MemoryBudget,
  ) {
    if (!(limitBytes > 0)) throw new RangeError(`a memory budget must be positive, got ${limitBytes}`);
  }

  /**
   * A part of this budget for one kind of work, so that it cannot take all of it: a reservation
   * waits for room in the part first, then in the whole.
   */
  part(limitBytes: number): MemoryBudget {
    return new MemoryBudget(Math.min(limitBytes, this.limitBytes), this);
  }

  /**
   * A quarter of the instance's memory: `instanceMemoryMb`, or with 0 the process's limit (its
   * cgroup), else the machine's memory.
   */
  static forInstance(instanceMemoryMb: number): MemoryBudget {
    const limit = process.constrainedMemory();
    const bytes =
      instanceMemoryMb > 0 ? instanceMemoryMb * 1024 * 1024 : limit > 0 && limit < totalmem() ? limit : totalmem();
    return new MemoryBudget(Math.floor(bytes * WORK_SHARE));
  }

  snapshot(): MemoryBudgetSnapshot {
    return {
      limitBytes: this.limitBytes,
      inUseBytes: this.used,
      peakBytes: this.peak,
      waits: this.waits,
      refused: this.refused,
    };
  }

  /** Waits until `bytes` fit, then holds them; the function returned gives them back (once). */
  async reserve(bytes: number): Promise<() => void> {
    const own = await this.reserveOwn(bytes);
    if (!this.whole) return own;
    const whole = await this.whole.reserve(bytes);
    return () => {
      whole();
      own();
    };
  }

  /** Holds `bytes` if they fit now and nobody waits; else undefined and nothing held. */
  tryReserve(bytes: number): (() => void) | undefined {
    if (this.waiting.length === 0 && this.fits(bytes)) {
      const own = this.hold(bytes);
      if (!this.whole) return own;
      const whole = this.whole.tryReserve(bytes);
      if (whole)
        return () => {
          whole();
          own();
        };
      own();
      return undefined;
    }
    this.refused++;
    return undefined;
  }

  private reserveOwn(bytes: number): Promise<() => void> {
    if (this.waiting.length === 0 && this.fits(bytes)) return Promise.resolve(this.hold(bytes));
    this.countWait();
    return new Promise((grant) => this.waiting.push({ bytes, grant }));
  }

  /** A wait in a part is a wait for the whole's room too: health shows the whole. */
  private countWait(): void {
    this.waits++;
    this.whole?.countWait();
  }

  private fits(bytes: number): boolean {
    return this.used === 0 || this.used + bytes <= this.limitBytes;
  }

  private hold(bytes: number): () => void {
    this.used += bytes;
    this.peak = Math.max(this.peak, this.used);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.used -= bytes;
      this.admit();
    };
  }

  /** Grants waiters in order while the first fits. */
  private admit(): void {
    for (let next = this.waiting[0]; next && this.fits(next.bytes); next = this.waiting[0]) {
      this.waiting.shift();
      // Held here, not when the waiter resumes: the next waiter's fit must see it.
      next.grant(this.hold(next.bytes));
    }
  }
}
