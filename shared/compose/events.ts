/** Batch events: the outbox's deliveries (attempts, retries, poison) and the operator's test event. */
import { type BatchEventBody, batchEventOutgoing } from '../bus/batch-event';
import { deliveryRetryOutgoing } from '../bus/delivery-retry';
import { MESSAGE_TYPES } from '../bus/message-types';
import { deliveryAttempt, deliveryWarmer } from '../events/delivery-attempt';
import { EndpointAgents } from '../events/endpoint-agents';
import { EventDelivery } from '../events/event-delivery';
import { TestEvents } from '../events/test-event';
import { tracedAttempt } from '../events/traced-attempt';
import { BATCH_EVENTS_TOPIC } from '../names';
import type { AppCore } from './core';

/** A pending delivery this long past due was lost with its process: recovery re-attempts it. */
const EVENT_LOST_AFTER_MS = 120_000;

export interface EventParts {
  events: EventDelivery;
  testEvents: TestEvents;
}

export function composeEvents({
  settings,
  options,
  bus,
  queues,
  manifests,
  open,
  names,
  now,
  log,
  telemetry,
}: AppCore): EventParts {
  const { publisher } = bus;
  // The topic gets every batch's event wherever Service Bus is configured (and the app has the topic).
  const publishBatchEvent =
    settings.serviceBus && options.batchEventsTopic !== false
      ? (e: BatchEventBody): Promise<void> => publisher.send(MESSAGE_TYPES.BatchEvent.entity, [batchEventOutgoing(e)])
      : undefined;
  // One pool per app: a receiver's connection is kept between batches.
  const agents = new EndpointAgents();
  const events = new EventDelivery({
    manifests,
    open,
    targets: () => settings.events.webhookUrls.map((target) => ({ kind: 'webhook' as const, target })),
    topic: publishBatchEvent ? { name: BATCH_EVENTS_TOPIC, publish: publishBatchEvent } : undefined,
    attempt: tracedAttempt(
      telemetry,
      deliveryAttempt({
        settings: settings.events,
        now,
        publish: publishBatchEvent,
        lookup: options.lookup,
        agents,
      }),
    ),
    warm: deliveryWarmer({ settings: settings.events, lookup: options.lookup, agents }),
    scheduleRetry: async (message, delayMs) => {
      await publisher.schedule(MESSAGE_TYPES.DeliveryRetry.entity, [deliveryRetryOutgoing(message)], delayMs);
    },
    poison: (record) => queues.send(names.deliveriesPoisonQueue, record),
    retryScheduleSeconds: settings.events.retryScheduleSeconds,
    lostAfterMs: EVENT_LOST_AFTER_MS,
    now,
    log,
    counted: (kind, outcome) => telemetry.metrics.delivery(outcome, kind),
  });
  // The attempt real webhook deliveries make (signing, guard, timeout), for a probe that records nothing.
  const testEvents = new TestEvents({
    webhookUrls: () => settings.events.webhookUrls,
    attempt: deliveryAttempt({ settings: settings.events, now, lookup: options.lookup }),
    now,
  });
  return { events, testEvents };
}
