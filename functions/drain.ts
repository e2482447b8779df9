/**
 * Service Bus topic `work-detected`: subscription `drain` wakes the map stage (an input queue),
 * subscription `aggregate` the reduce stage (the results queue). One handler serves both; the
 * event names the queue, and the app maps its wire role to the stage (ROLE_OF in names.ts).
 */
import { app, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { DIAGNOSTIC_ID } from '../shared/bus/outgoing-message';
import { parseWorkDetected } from '../shared/bus/work-detected';
import type { DrainResult } from '../shared/drain/queue-worker';
import { ensureError, PermanentError } from '../shared/errors';
import { FUNCTION_NAMES, SUBSCRIPTIONS, TOPIC } from '../shared/names';
import { checkedTraceparent } from '../shared/telemetry/telemetry';
import { pushdrainApp } from './pushdrain-app';

/**
 * Returns normally to complete the message; throws to abandon it (redelivery retries the
 * drain). A malformed or foreign event can never succeed, so it is logged and completed.
 */
export async function onWorkDetected(
  app: PushdrainApp,
  body: unknown,
  context: InvocationContext,
): Promise<DrainResult | undefined> {
  const event = parseWorkDetected(body);
  if (typeof event === 'string') {
    context.error(`WorkDetected ignored: ${event}`);
    return undefined;
  }
  const properties = context.triggerMetadata?.applicationProperties as Record<string, unknown> | undefined;
  const traceparent = checkedTraceparent(properties?.[DIAGNOSTIC_ID]);
  try {
    return await app.drain(traceparent ? { ...event, traceparent } : event);
  } catch (e) {
    if (e instanceof PermanentError) {
      context.error(`WorkDetected ignored: ${e.message}`);
      return undefined;
    }
    context.warn(`drain of ${event.queueName} failed, the event will be redelivered: ${ensureError(e).message}`);
    throw e;
  }
}

app.serviceBusTopic(FUNCTION_NAMES.drain, {
  connection: 'ServiceBusConnection',
  topicName: TOPIC,
  subscriptionName: SUBSCRIPTIONS.drain.name,
  handler: async (message, context) => {
    await onWorkDetected(pushdrainApp(), message, context);
  },
});

app.serviceBusTopic('aggregate', {
  connection: 'ServiceBusConnection',
  topicName: TOPIC,
  subscriptionName: SUBSCRIPTIONS.aggregate.name,
  handler: async (message, context) => {
    await onWorkDetected(pushdrainApp(), message, context);
  },
});
