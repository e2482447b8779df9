/**
 * Service Bus topic `work-detected`: subscription `drain` (role = input) drains an input queue,
 * subscription `aggregate` (role = output) drains the results queue (the controller). One handler
 * serves both; the event names the queue.
 */
import { app, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import type { DrainResult } from '../shared/drain/coordinator';
import { ensureError, PermanentError } from '../shared/errors';
import { FUNCTION_NAMES, SUBSCRIPTIONS, TOPIC } from '../shared/names';
import { parseWorkDetected } from '../shared/notify/events';
import { pushdrainApp } from './pushdrain-app';

/**
 * Returns normally to complete the message; throws to abandon it (redelivery retries the
 * drain). A malformed or foreign event can never succeed, so it is logged and completed.
 */
export async function onWorkDetected(app: PushdrainApp, body: unknown, context: InvocationContext): Promise<DrainResult | undefined> {
  const event = parseWorkDetected(body);
  if (typeof event === 'string') {
    context.error(`WorkDetected ignored: ${event}`);
    return undefined;
  }
  try {
    return await app.drain(event);
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
