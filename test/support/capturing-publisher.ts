/** A BusPublisher that records what it is given, standing in for Service Bus where a test feeds the handlers itself. */
import type { BusPublisher } from '../../shared/bus/bus-publisher';
import type { DeliveryRetryMessage } from '../../shared/bus/delivery-retry';
import { MESSAGE_TYPES } from '../../shared/bus/message-types';
import { DIAGNOSTIC_ID, type OutgoingMessage } from '../../shared/bus/outgoing-message';
import type { WatchdogCheck } from '../../shared/bus/watchdog-check';
import type { WorkDetected } from '../../shared/bus/work-detected';

export interface Captured {
  event: WorkDetected;
  delayMs: number;
}

export class CapturingPublisher implements BusPublisher {
  readonly all: Captured[] = [];
  private cursor = 0;
  /** Make the next n sends or schedules fail (a Service Bus outage). */
  failNext = 0;
  closed = false;
  readonly checks: { check: WatchdogCheck | DeliveryRetryMessage; delayMs: number }[] = [];
  /** Delays of the scaling agent's scheduled checks. */
  readonly scaleChecks: number[] = [];
  /** Batch events sent to the `batch-events` topic, as their CloudEvent JSON. */
  readonly batchEvents: string[] = [];

  send(entity: string, messages: readonly OutgoingMessage[]): Promise<void> {
    return this.capture(entity, messages, 0);
  }

  schedule(entity: string, messages: readonly OutgoingMessage[], delayMs: number): Promise<void> {
    return this.capture(entity, messages, delayMs);
  }

  /**
   * WorkDetected events, sent now (0) or scheduled: what a subclass intercepts to stand in for a
   * failure, and how a test hands the pump an event as if the app had sent it.
   */
  publish(events: readonly WorkDetected[], delayMs = 0): Promise<void> {
    for (const event of events) this.all.push({ event, delayMs });
    return Promise.resolve();
  }

  private capture(entity: string, messages: readonly OutgoingMessage[], delayMs: number): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new Error(`injected failure sending to ${entity}`));
    }
    const events: WorkDetected[] = [];
    for (const m of messages) {
      if (m.subject === MESSAGE_TYPES.WorkDetected.subject) {
        const traceparent = m.applicationProperties[DIAGNOSTIC_ID];
        const body = m.body as WorkDetected;
        events.push(typeof traceparent === 'string' ? { ...body, traceparent } : body);
      } else if (m.subject === MESSAGE_TYPES.ScaleCheck.subject) this.scaleChecks.push(delayMs);
      else if (entity === MESSAGE_TYPES.WatchdogCheck.entity)
        this.checks.push({ check: m.body as WatchdogCheck | DeliveryRetryMessage, delayMs });
      else if (entity === MESSAGE_TYPES.BatchEvent.entity) this.batchEvents.push(String(m.body));
      else return Promise.reject(new Error(`${m.subject} to ${entity} is not a message this app sends`));
    }
    return events.length > 0 ? this.publish(events, delayMs) : Promise.resolve();
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
