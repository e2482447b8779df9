/**
 * Fault-injection switches for tests. ServerBusy, latency and dropped sends are state read on
 * the hot path; detach and dropConnections act on live links and sockets, so the broker
 * supplies them.
 */
import { AttachFaults, type AttachRefusal } from './attach-faults';
import { isWithin } from './entities';

export interface FaultSwitches {
  /** The next `n` sends are answered with `com.microsoft:server-busy`. */
  serverBusy(n: number): void;
  /** Detaches every link on `entityPath` (or below it) with `amqp:link:detach-forced`. */
  detach(entityPath: string): void;
  /** Destroys every client TCP socket; the SDK reconnects by itself. */
  dropConnections(): void;
  /** Delays every reply and delivery by `ms`. */
  setLatency(ms: number): void;
  /**
   * A broker that silently loses messages: every send and schedule to `entityPath` (a queue or
   * topic; every entity when omitted) is acknowledged as successful, yet nothing is stored or
   * delivered. Messages stored before the switch are left alone. Throws for an unknown entity.
   */
  dropSends(entityPath?: string): void;
  /** On: drops every connection and refuses new ones (the namespace is unreachable). Off: accepts again. */
  outage(on: boolean): void;
  /** Detaches the links at or below `entityPath` and refuses new ones (unauthorized, not found, disabled); undefined lifts it. */
  refuseAttach(entityPath: string, kind: AttachRefusal | undefined): void;
  /** Clears ServerBusy, latency, dropped sends, the outage and attach refusals. */
  reset(): void;
}

export class FaultState {
  private busyRemaining = 0;
  private latency = 0;
  /** Entity paths whose sends are dropped; `''` stands for every entity. */
  private readonly dropScopes = new Set<string>();
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

  /** `undefined`: every entity. */
  setDrop(entityPath: string | undefined): void {
    this.dropScopes.add(entityPath ?? '');
  }

  /** True when a send or schedule to `targetPath` must be acknowledged and thrown away. */
  drops(targetPath: string): boolean {
    if (this.dropScopes.size === 0) return false;
    if (this.dropScopes.has('')) return true;
    for (const scope of this.dropScopes) if (isWithin(targetPath, scope)) return true;
    return false;
  }

  reset(): void {
    this.busyRemaining = 0;
    this.latency = 0;
    this.dropScopes.clear();
    this.outage = false;
    this.attach.clear();
  }
}
