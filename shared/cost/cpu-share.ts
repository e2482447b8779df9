/**
 * CPU time per unit of work. Node has no per-task CPU clock, so the process's CPU time is read
 * whenever a unit starts or ends (or someone asks), and what was used since the last reading is
 * shared evenly among the units running meanwhile. CPU used while none runs (idle timers, the
 * status page) is charged to no batch. What a unit waits for (Storage, Service Bus) costs it none.
 */
export type CpuCredit<U> = (unit: U, ms: number) => void;

export class CpuShare<U> {
  private readonly running = new Set<U>();
  private last = process.cpuUsage();

  constructor(private readonly credit: CpuCredit<U>) {}

  start(unit: U): void {
    this.tick();
    this.running.add(unit);
  }

  end(unit: U): void {
    this.tick();
    this.running.delete(unit);
  }

  /** Shares out the CPU used since the last reading among the units running. */
  tick(): void {
    const used = process.cpuUsage(this.last);
    this.last = process.cpuUsage();
    if (this.running.size === 0) return;
    const ms = (used.user + used.system) / 1000 / this.running.size;
    for (const u of this.running) this.credit(u, ms);
  }
}
