/**
 * The notifier's publisher, counting each message it sends as one Service Bus operation of the
 * batch whose work sends it (the running usage scope). Receives are counted where the triggers
 * take their events (app.ts's drain use case).
 */
import type { WorkPublisher } from '../notify/events';
import type { UsageLedger } from './usage-ledger';

export function countedPublisher(inner: WorkPublisher, usage: Pick<UsageLedger, 'countServiceBus'>): WorkPublisher {
  const counted: WorkPublisher = {
    publish: async (events, options) => {
      const r = await inner.publish(events, options);
      usage.countServiceBus(events.length);
      return r;
    },
    scheduleWatchdog: async (message, delayMs) => {
      const r = await inner.scheduleWatchdog(message, delayMs);
      usage.countServiceBus(1);
      return r;
    },
    close: () => inner.close(),
  };
  if (inner.cancelWatchdog) {
    const cancel = inner.cancelWatchdog.bind(inner);
    counted.cancelWatchdog = async (seq) => {
      await cancel(seq);
      usage.countServiceBus(1);
    };
  }
  if (inner.publishBatchEvent) {
    const send = inner.publishBatchEvent.bind(inner);
    counted.publishBatchEvent = async (event) => {
      await send(event);
      usage.countServiceBus(1);
    };
  }
  if (inner.scheduleScaleCheck) counted.scheduleScaleCheck = inner.scheduleScaleCheck.bind(inner);
  if (inner.health) counted.health = inner.health.bind(inner);
  return counted;
}
