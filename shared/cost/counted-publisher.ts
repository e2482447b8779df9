/**
 * The notifier's publisher, counting each message it sends or schedules, and each cancel, as one
 * Service Bus operation of the batch whose work sends it (the running usage scope). Receives are
 * counted where the triggers take their events (UsageLedger.runTriggered).
 */
import type { BusPublisher } from '../bus/bus-publisher';
import type { UsageLedger } from './usage-ledger';

export function countedPublisher(inner: BusPublisher, usage: Pick<UsageLedger, 'countServiceBus'>): BusPublisher {
  const counted: BusPublisher = {
    send: async (entity, messages) => {
      await inner.send(entity, messages);
      usage.countServiceBus(messages.length);
    },
    schedule: async (entity, messages, delayMs) => {
      const r = await inner.schedule(entity, messages, delayMs);
      usage.countServiceBus(messages.length);
      return r;
    },
    close: () => inner.close(),
  };
  if (inner.cancel) {
    const cancel = inner.cancel.bind(inner);
    counted.cancel = async (entity, seq) => {
      await cancel(entity, seq);
      usage.countServiceBus(1);
    };
  }
  if (inner.health) counted.health = inner.health.bind(inner);
  return counted;
}
