/** Shared by the two Service Bus triggers: parse the event, drain, let the host settle. */
import type { InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import type { DrainResult } from '../shared/drain/coordinator';
import { ensureError, PermanentError } from '../shared/errors';
import { parseWorkDetected } from '../shared/notify/events';

/**
 * Returns normally to complete the message; throws to abandon it (redelivery retries the
 * drain). A malformed or foreign event can never succeed, so it is logged and completed.
 */
export async function onWorkDetected(rt: PushdrainApp, body: unknown, context: InvocationContext): Promise<DrainResult | undefined> {
  const event = parseWorkDetected(body);
  if (typeof event === 'string') {
    context.error(`WorkDetected ignored: ${event}`);
    return undefined;
  }
  try {
    return await rt.drain(event);
  } catch (e) {
    if (e instanceof PermanentError) {
      context.error(`WorkDetected ignored: ${e.message}`);
      return undefined;
    }
    context.warn(`drain of ${event.queueName} failed, the event will be redelivered: ${ensureError(e).message}`);
    throw e;
  }
}
