/**
 * Feeds captured Service Bus topic triggers from `ServiceBusReceiver.subscribe`, settling
 * like the Functions host: complete on success, abandon on a thrown error, and renew the
 * lock automatically up to host.json's maxAutoLockRenewalDuration.
 */
import { ServiceBusClient, type ServiceBusReceivedMessage, type ServiceBusReceiver } from '@azure/service-bus';

import { serviceBusConnection } from '../../../shared/config/connections';
import { credentialFor } from '../../../shared/storage/clients';
import type { ServiceBusHostOptions } from './host-json';
import { type HostLog, invocationContext, resolveSetting } from './invocation';
import { ReceiveErrorLog } from './receive-error-log';
import { type Registration, stringProp, triggerOf } from './registry';

export interface ServiceBusHost {
  readonly listeners: { functionName: string; entity: string }[];
  /** Stops receiving, lets in-flight invocations finish and settle, then closes the links. */
  close(): Promise<void>;
}

function clientFor(
  connection: string,
  env: Readonly<Record<string, string | undefined>>,
  options: ServiceBusHostOptions,
): ServiceBusClient {
  const c = serviceBusConnection(env, connection);
  if (!c)
    throw new Error(
      `Service Bus trigger connection "${connection}" is not configured (set ${connection} or ${connection}__fullyQualifiedNamespace)`,
    );
  const clientOptions = { retryOptions: options.retry };
  return c.kind === 'connectionString'
    ? new ServiceBusClient(c.connectionString, clientOptions)
    : new ServiceBusClient(c.fullyQualifiedNamespace, credentialFor(c), clientOptions);
}

function metadata(m: ServiceBusReceivedMessage): Record<string, unknown> {
  return {
    messageId: m.messageId,
    deliveryCount: m.deliveryCount,
    enqueuedTimeUtc: m.enqueuedTimeUtc?.toISOString(),
    lockedUntilUtc: m.lockedUntilUtc?.toISOString(),
    sequenceNumber: m.sequenceNumber?.toString(),
    contentType: m.contentType,
    applicationProperties: m.applicationProperties,
  };
}

export function startServiceBusTriggers(
  functions: Registration[],
  env: Readonly<Record<string, string | undefined>>,
  options: ServiceBusHostOptions,
  log: HostLog,
): ServiceBusHost {
  const clients = new Map<string, ServiceBusClient>();
  const errorLogs = new Map<string, ReceiveErrorLog>();
  const receivers: { receiver: ServiceBusReceiver; close: () => Promise<void> }[] = [];
  const inflight = new Set<Promise<unknown>>();
  const listeners: ServiceBusHost['listeners'] = [];
  for (const f of functions.filter((r) => triggerOf(r).type === 'serviceBusTrigger')) {
    const t = triggerOf(f);
    const connection = stringProp(t, 'connection') ?? 'ServiceBusConnection';
    let client = clients.get(connection);
    if (!client) {
      client = clientFor(connection, env, options);
      clients.set(connection, client);
    }
    let errors = errorLogs.get(connection);
    if (!errors) {
      errors = new ReceiveErrorLog({
        connection,
        warn: (m) => log('warning', 'host', m),
        info: (m) => log('information', 'host', m),
        now: () => Date.now(),
        ...(options.receiveErrorSummaryMs !== undefined ? { summaryEveryMs: options.receiveErrorSummaryMs } : {}),
      });
      errorLogs.set(connection, errors);
    }
    const errorLog = errors;
    const what = `function ${f.name}`;
    const resolve = (key: string): string | undefined => {
      const v = stringProp(t, key);
      return v === undefined ? undefined : resolveSetting(v, env, what);
    };
    const topic = resolve('topicName');
    const subscription = resolve('subscriptionName');
    const queue = resolve('queueName');
    const receiverOptions = { maxAutoLockRenewalDurationInMs: options.maxAutoLockRenewalDurationMs };
    const receiver =
      topic && subscription
        ? client.createReceiver(topic, subscription, receiverOptions)
        : client.createReceiver(queue ?? '', receiverOptions);
    const entity = topic && subscription ? `${topic}/Subscriptions/${subscription}` : (queue ?? '');
    const sub = receiver.subscribe(
      {
        processMessage: async (message) => {
          const run = Promise.resolve(f.handler(message.body, invocationContext(f.name, log, metadata(message))));
          inflight.add(run);
          try {
            await run; // a throw here makes the SDK abandon the message
          } finally {
            inflight.delete(run);
          }
        },
        processError: async (args) => {
          // A failed invocation is the function's own line, as the Functions host logs it.
          if (args.errorSource === 'processMessageCallback')
            log('warning', f.name, `Service Bus ${args.errorSource} error on ${entity}: ${args.error.message}`);
          // Receive errors: one line per state change, then a summary (an outage makes the SDK report every retry).
          else errorLog.error(`${entity} (${f.name}, ${args.errorSource})`, args.error.message);
          return Promise.resolve();
        },
      },
      { autoCompleteMessages: options.autoCompleteMessages, maxConcurrentCalls: options.maxConcurrentCalls },
    );
    receivers.push({ receiver, close: () => sub.close() });
    listeners.push({ functionName: f.name, entity });
  }
  return {
    listeners,
    close: async () => {
      await Promise.all(receivers.map((r) => r.close()));
      await Promise.allSettled([...inflight]);
      await Promise.all(receivers.map((r) => r.receiver.close()));
      await Promise.all([...clients.values()].map((c) => c.close()));
      for (const e of errorLogs.values()) e.close();
    },
  };
}
