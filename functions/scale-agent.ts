/** Service Bus topic `work-detected`, subscription `scale` (every event, and the agent's own checks): the scaling agent. */
import { app, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { parseScaleSignal } from '../shared/bus/scale-check';
import { ensureError } from '../shared/errors';
import { FUNCTION_NAMES, SUBSCRIPTIONS, TOPIC } from '../shared/names';
import { redactSecrets } from '../shared/redaction';
import type { ScaleOutcome } from '../shared/scale/agent';
import { pushdrainApp } from './pushdrain-app';

/**
 * Always completes: a signal is advisory, the next one re-evaluates, and a redelivery loop (or
 * dead letters) during a Storage outage would help nobody. Failures are logged.
 */
export async function onScaleSignal(
  app: PushdrainApp,
  body: unknown,
  context: InvocationContext,
): Promise<ScaleOutcome | undefined> {
  const signal = parseScaleSignal(body);
  if (typeof signal === 'string') {
    context.error(`scale signal ignored: ${signal}`);
    return undefined;
  }
  try {
    return await app.scale(signal);
  } catch (e) {
    context.warn(`scale agent: evaluation failed, the next signal retries: ${redactSecrets(ensureError(e).message)}`);
    return undefined;
  }
}

app.serviceBusTopic(FUNCTION_NAMES.scaleAgent, {
  connection: 'ServiceBusConnection',
  topicName: TOPIC,
  subscriptionName: SUBSCRIPTIONS.scale.name,
  handler: async (message, context) => {
    await onScaleSignal(pushdrainApp(), message, context);
  },
});
