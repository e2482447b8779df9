/** A WorkPublisher that records events, standing in for Service Bus where a test feeds the handlers itself. */
import type { DeliveryRetryMessage } from '../../shared/notify/delivery-retry-message';
import type { PublishOptions, WatchdogCheck, WorkDetected, WorkPublisher } from '../../shared/notify/events';

export interface Captured {
  event: WorkDetected;
  delayMs: number;
}

export class CapturingPublisher implements WorkPublisher {
  readonly all: Captured[] = [];
  private cursor = 0;
  /** Make the next n publishes fail (a Service Bus outage). */
  failNext = 0;
  closed = false;

  publish(events: readonly WorkDetected[], options: PublishOptions = {}): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new Error('injected publish failure'));
    }
    for (const event of events) this.all.push({ event, delayMs: options.delayMs ?? 0 });
    return Promise.resolve();
  }

  readonly checks: { check: WatchdogCheck | DeliveryRetryMessage; delayMs: number }[] = [];

  scheduleWatchdog(check: WatchdogCheck | DeliveryRetryMessage, delayMs: number): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new Error('injected schedule failure'));
    }
    this.checks.push({ check, delayMs });
    return Promise.resolve();
  }

  /** Delays of the scaling agent's scheduled checks. */
  readonly scaleChecks: number[] = [];

  scheduleScaleCheck(delayMs: number): Promise<void> {
    this.scaleChecks.push(delayMs);
    return Promise.resolve();
  }

  /** Events published since the last call. */
  take(): Captured[] {
    const out = this.all.slice(this.cursor);
    this.cursor = this.all.length;
    return out;
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}
