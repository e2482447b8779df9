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
import type { BusPublisher, ScheduledMessages } from '../../../shared/bus/bus-publisher';
import type { OutgoingMessage } from '../../../shared/bus/outgoing-message';
import { createApp } from '../../../shared/create-app';
import { FUNCTION_NAMES, SUBSCRIPTIONS } from '../../../shared/names';
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
class CountingPublisher implements BusPublisher {
  sent = 0;

  constructor(private readonly inner: BusPublisher) {}

  send(entity: string, messages: readonly OutgoingMessage[]): Promise<void> {
    this.sent += messages.length;
    return this.inner.send(entity, messages);
  }

  schedule(entity: string, messages: readonly OutgoingMessage[], delayMs: number): Promise<ScheduledMessages | void> {
    this.sent += messages.length;
    return this.inner.schedule(entity, messages, delayMs);
  }

  cancel(entity: string, sequenceNumbers: readonly string[]): Promise<void> {
    return this.inner.cancel ? this.inner.cancel(entity, sequenceNumbers) : Promise.resolve();
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
  );
  const runtime = createApp(settings, {
    publisher,
    // As deployed without the topic: the app sends no batch events.
    ...(options.withoutBatchEvents ? { batchEventsTopic: false as const } : {}),
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
    sent: () => publisher.sent,
    flushUsage: () => runtime.flushUsage(),
    stop: async () => {
      // As the host's graceful stop: running drains hand their rest over, then links close.
      runtime.beginShutdown();
      await host.close();
      await runtime.close();
    },
  };
}
