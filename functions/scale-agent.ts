/** Service Bus topic `work-detected`, subscription `scale` (every event, and the agent's own checks): the scaling agent. */
import { app, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { FUNCTION_NAMES, SUBSCRIPTIONS, TOPIC } from '../shared/names';
import { parseScaleSignal } from '../shared/notify/events';
import type { ScaleOutcome } from '../shared/scale/agent';
import { instance } from './instance';

/** Throws to abandon (redelivery retries); a malformed signal is logged and completed. */
export async function onScaleSignal(rt: PushdrainApp, body: unknown, context: InvocationContext): Promise<ScaleOutcome | undefined> {
  const signal = parseScaleSignal(body);
  if (typeof signal === 'string') {
    context.error(`scale signal ignored: ${signal}`);
    return undefined;
  }
  return rt.scale(signal);
}

app.serviceBusTopic(FUNCTION_NAMES.scaleAgent, {
  connection: 'ServiceBusConnection',
  topicName: TOPIC,
  subscriptionName: SUBSCRIPTIONS.scale.name,
  handler: async (message, context) => {
    await onScaleSignal(instance(), message, context);
  },
});
