/**
 * pushdrain as deployed: the PushdrainApp publishes WorkDetected to a real Service Bus (the
 * development broker, over AMQP with the official SDK), and the local host's own Service Bus
 * trigger runner delivers each event to the drain / aggregate handler with host.json's
 * settings (its maxConcurrentCalls per function, auto-complete, lock renewal), and the scaling
 * agent's trigger on the `scale` subscription, as deployed. Only the HTTP transport is skipped:
 * batches go straight to the POST handler. (The watchdog queue is shared by the bench's apps and
 * its first check comes after the SLA, far past any scenario's window: it is not registered.)
 */
import type { InvocationContext } from '@azure/functions';

import { onWorkDetected } from '../../../functions/drain';
import { onScaleSignal } from '../../../functions/scale-agent';
import type { PushdrainApp } from '../../../shared/app';
import { createApp } from '../../../shared/create-app';
import { FUNCTION_NAMES, SUBSCRIPTIONS } from '../../../shared/names';
import type { DeliveryRetryMessage } from '../../../shared/notify/delivery-retry-message';
import type {
  PublishOptions,
  ScheduledMessages,
  WatchdogCheck,
  WorkDetected,
  WorkPublisher,
} from '../../../shared/notify/events';
import { createServiceBusClient, ServiceBusPublisher } from '../../../shared/notify/service-bus-publisher';
import { StorageMeter } from '../../../shared/storage/meter';
import { serviceBusOptions } from '../../devstack/host/host-json';
import { findRepoRoot, type Registration } from '../../devstack/host/registry';
import { type ServiceBusHost, startServiceBusTriggers } from '../../devstack/host/service-bus-triggers';
import type { AppOptions, BenchApp, PushdrainTrigger } from '../app';
import { appSettings } from '../support/env';
import { benchLog, hostLog } from '../support/log';
import { postNdjson } from '../support/submit';

/** Counts what this app sends to Service Bus (the broker's own counters are shared by every app). */
class CountingPublisher implements WorkPublisher {
  events = 0;
  scheduled = 0;
  batchEvents = 0;
  /** As deployed: the app sends every batch's CloudEvent to `batch-events` (absent: an app without the topic). */
  readonly publishBatchEvent?: (event: { id: string; type: string; body: string }) => Promise<void>;

  constructor(
    private readonly inner: WorkPublisher,
    options: { batchEvents?: boolean } = {},
  ) {
    const send = inner.publishBatchEvent?.bind(inner);
    if (send && options.batchEvents !== false)
      this.publishBatchEvent = (event) => {
        this.batchEvents++;
        return send(event);
      };
  }

  publish(events: readonly WorkDetected[], options?: PublishOptions): Promise<ScheduledMessages | void> {
    this.events += events.length;
    return this.inner.publish(events, options);
  }

  scheduleWatchdog(check: WatchdogCheck | DeliveryRetryMessage, delayMs: number): Promise<ScheduledMessages | void> {
    this.scheduled++;
    return this.inner.scheduleWatchdog(check, delayMs);
  }

  cancelWatchdog(sequenceNumbers: readonly string[]): Promise<void> {
    return this.inner.cancelWatchdog ? this.inner.cancelWatchdog(sequenceNumbers) : Promise.resolve();
  }

  scheduleScaleCheck(delayMs: number): Promise<void> {
    if (!this.inner.scheduleScaleCheck) return Promise.reject(new Error('the publisher cannot schedule scale checks'));
    this.scheduled++;
    return this.inner.scheduleScaleCheck(delayMs);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

const ALL_TRIGGERS: readonly PushdrainTrigger[] = ['drain', 'aggregate', 'scaleAgent'];

type Handler = (app: PushdrainApp, body: unknown, context: InvocationContext) => Promise<unknown>;

function trigger(
  name: string,
  topic: string,
  subscription: string,
  app: PushdrainApp,
  handle: Handler = onWorkDetected,
): Registration {
  return {
    name,
    bindings: {
      message: {
        type: 'serviceBusTrigger',
        direction: 'in',
        name: 'message',
        connection: 'ServiceBusConnection',
        topicName: topic,
        subscriptionName: subscription,
      },
    },
    // The body of the registrations in functions/drain.ts and functions/scale-agent.ts, with this app's runtime.
    handler: async (body: unknown, context: unknown) => {
      await handle(app, body, context as InvocationContext);
    },
  };
}

export function startPushdrain(options: AppOptions): BenchApp {
  const sb = options.serviceBus;
  if (!sb) throw new Error('pushdrain needs a Service Bus connection');
  const settings = appSettings(
    { storage: options.storage, serviceBus: sb.connectionString },
    options.prefix,
    options.settings,
  );
  const meter = options.meter ?? new StorageMeter();
  if (!settings.serviceBus) throw new Error('unreachable: ServiceBusConnection was set');
  const publisher = new CountingPublisher(
    new ServiceBusPublisher(createServiceBusClient(settings.serviceBus), sb.topic),
    { batchEvents: !options.withoutBatchEvents },
  );
  const runtime = createApp(settings, {
    publisher,
    meter,
    log: benchLog,
    ...(options.telemetry ? { telemetry: options.telemetry } : {}),
  });
  const triggers: Record<PushdrainTrigger, Registration> = {
    drain: trigger('drain', sb.topic, SUBSCRIPTIONS.drain.name, runtime),
    aggregate: trigger('aggregate', sb.topic, SUBSCRIPTIONS.aggregate.name, runtime),
    // As deployed, the scaling agent reads every event too, and samples the queues' depth.
    scaleAgent: trigger(FUNCTION_NAMES.scaleAgent, sb.topic, SUBSCRIPTIONS.scale.name, runtime, onScaleSignal),
  };
  const host: ServiceBusHost = startServiceBusTriggers(
    (options.functions ?? ALL_TRIGGERS).map((f) => triggers[f]),
    { ServiceBusConnection: sb.connectionString },
    serviceBusOptions(findRepoRoot(__dirname)),
    hostLog,
  );
  return {
    design: 'pushdrain',
    settings,
    runtime,
    meter,
    submit: (body) => postNdjson(runtime, body),
    sent: () => publisher.events + publisher.scheduled + publisher.batchEvents,
    flushUsage: () => runtime.flushUsage(),
    stop: async () => {
      // As the host's graceful stop: running drains hand their rest over, then links close.
      runtime.beginShutdown();
      await host.close();
      await runtime.close();
    },
  };
}
