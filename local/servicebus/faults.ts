/**
 * Fault-injection switches for tests. ServerBusy and latency are state read on the hot path;
 * detach and dropConnections act on live links and sockets, so the broker supplies them.
 */
import { AttachFaults, type AttachRefusal } from './attach-faults';

export type { AttachRefusal };

export interface FaultSwitches {
  /** The next `n` sends are answered with `com.microsoft:server-busy`. */
  serverBusy(n: number): void;
  /** Detaches every link on `entityPath` (or below it) with `amqp:link:detach-forced`. */
  detach(entityPath: string): void;
  /** Destroys every client TCP socket; the SDK reconnects by itself. */
  dropConnections(): void;
  /** Delays every reply and delivery by `ms`. */
  setLatency(ms: number): void;
  /** On: drops every connection and refuses new ones (the namespace is unreachable). Off: accepts again. */
  outage(on: boolean): void;
  /** Detaches the links at or below `entityPath` and refuses new ones (unauthorized, not found, disabled); undefined lifts it. */
  refuseAttach(entityPath: string, kind: AttachRefusal | undefined): void;
  /** Clears ServerBusy, latency, the outage and attach refusals. */
  reset(): void;
}

export class FaultState {
  private busyRemaining = 0;
  private latency = 0;
  /** True while the broker refuses connections (see FaultSwitches.outage). */
  outage = false;
  readonly attach = new AttachFaults();

  setServerBusy(n: number): void {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`serverBusy(n): n must be an integer ≥ 0, got ${n}`);
    this.busyRemaining = n;
  }

  /** True when this send must be refused; consumes one from the budget. */
  takeServerBusy(): boolean {
    if (this.busyRemaining === 0) return false;
    this.busyRemaining--;
    return true;
  }

  setLatency(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`setLatency(ms): ms must be ≥ 0, got ${ms}`);
    this.latency = ms;
  }

  get latencyMs(): number {
    return this.latency;
  }

  reset(): void {
    this.busyRemaining = 0;
    this.latency = 0;
    this.outage = false;
    this.attach.clear();
  }
}
