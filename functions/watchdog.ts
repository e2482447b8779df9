/** Service Bus queue `batch-watchdog`: a batch's scheduled "is it done yet?" check, or a delivery's retry. */
import { app, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { parseWatchdogQueueMessage } from '../shared/bus/watchdog-queue-message';
import type { DeliveryOutcome } from '../shared/events/event-delivery';
import { WATCHDOG_QUEUE } from '../shared/names';
import type { WatchdogOutcome } from '../shared/watchdog/check-batch';
import { pushdrainApp } from './pushdrain-app';

/** Throws to abandon (redelivery retries it); a malformed message is logged and completed. */
export async function onWatchdog(
  app: PushdrainApp,
  body: unknown,
  context: InvocationContext,
): Promise<WatchdogOutcome | DeliveryOutcome | undefined> {
  const message = parseWatchdogQueueMessage(body);
  if (typeof message === 'string') {
    context.error(`watchdog queue message ignored: ${message}`);
    return undefined;
  }
  if (message.kind === 'delivery-retry') {
    const { retry } = message;
    const outcome = await app.retryDelivery(retry);
    context.log(`delivery retry ${retry.batchId} ${retry.eventId}#${retry.index} (${retry.attempts}): ${outcome.kind}`);
    return outcome;
  }
  const { check } = message;
  const outcome = await app.watchdog(check);
  context.log(`watchdog ${check.batchId} #${check.attempt}: ${outcome.kind}`);
  return outcome;
}

app.serviceBusQueue('watchdog', {
  connection: 'ServiceBusConnection',
  queueName: WATCHDOG_QUEUE,
  handler: async (message, context) => {
    await onWatchdog(pushdrainApp(), message, context);
  },
});
