/**
 * The publisher the polling baselines get: they have no push path, so what ingest and the
 * map step would publish goes nowhere. Counted, so a report can show it stayed unused.
 */
import type { DeliveryRetryMessage } from '../../../shared/notify/delivery-retry-message';
import type { PublishOptions, WatchdogCheck, WorkDetected, WorkPublisher } from '../../../shared/notify/events';

export class NullPublisher implements WorkPublisher {
  events = 0;

  publish(events: readonly WorkDetected[], _options?: PublishOptions): Promise<void> {
    this.events += events.length;
    return Promise.resolve();
  }

  scheduleWatchdog(_check: WatchdogCheck | DeliveryRetryMessage, _delayMs: number): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
