/**
 * The publisher the polling baselines get: they have no push path, so what ingest and the
 * map step would publish goes nowhere. Its WorkDetected events are counted, so a report can show
 * it stayed unused.
 */
import type { BusPublisher } from '../../../shared/bus/bus-publisher';
import { MESSAGE_TYPES } from '../../../shared/bus/message-types';
import type { OutgoingMessage } from '../../../shared/bus/outgoing-message';

export class NullPublisher implements BusPublisher {
  events = 0;

  send(_entity: string, messages: readonly OutgoingMessage[]): Promise<void> {
    this.events += messages.filter((m) => m.subject === MESSAGE_TYPES.WorkDetected.subject).length;
    return Promise.resolve();
  }

  schedule(entity: string, messages: readonly OutgoingMessage[], _delayMs: number): Promise<void> {
    return this.send(entity, messages);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
