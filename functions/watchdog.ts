/** Service Bus queue `batch-watchdog`: a batch's scheduled "is it done yet?" check. */
import { app, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import type { DeliveryOutcome } from '../shared/events/event-delivery';
import { WATCHDOG_QUEUE } from '../shared/names';
import { parseWatchdogCheck } from '../shared/notify/events';
import type { WatchdogOutcome } from '../shared/watchdog/check-batch';
import { pushdrainApp } from './pushdrain-app';

/** Throws to abandon (redelivery retries the check); a malformed check is logged and completed. */
export async function onWatchdog(
  app: PushdrainApp,
  body: unknown,
  context: InvocationContext,
): Promise<WatchdogOutcome | DeliveryOutcome | undefined> {
  const check = parseWatchdogCheck(body);
  if (typeof check === 'string') {
    context.error(`watchdog check ignored: ${check}`);
    return undefined;
  }
  const outcome = await app.watchdog(check);
  context.log(`${check.delivery ? 'delivery retry' : 'watchdog'} ${check.batchId} #${check.attempt}: ${outcome.kind}`);
  return outcome;
}

app.serviceBusQueue('watchdog', {
  connection: 'ServiceBusConnection',
  queueName: WATCHDOG_QUEUE,
  handler: async (message, context) => {
    await onWatchdog(pushdrainApp(), message, context);
  },
});
