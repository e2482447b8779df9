/**
 * Service Bus queues `backlog-0…` of the secondary namespace: the syphon restores each message
 * to its destination on the primary. Registered only when ServiceBusSecondaryConnection is set
 * (one trigger per backlog queue, PUSHDRAIN_BACKLOG_QUEUE_COUNT of them), so an app without a
 * secondary namespace has no listener on it and pays nothing.
 */
import { app, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { SECONDARY_CONNECTION, syphonQueues } from '../shared/config/settings';
import type { SyphonOutcome } from '../shared/notify/syphon';
import { pushdrainApp } from './pushdrain-app';

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Returns to complete the backlog message, throws to abandon it (delivery retries it). */
export async function onBacklogMessage(
  app: PushdrainApp,
  body: unknown,
  context: InvocationContext,
): Promise<SyphonOutcome> {
  const meta = context.triggerMetadata ?? {};
  const messageId = typeof meta.messageId === 'string' ? meta.messageId : undefined;
  const outcome = await app.syphon({
    body,
    // Extension v5 names them applicationProperties; older bundles said userProperties.
    applicationProperties: record(meta.applicationProperties) ?? record(meta.userProperties),
    ...(messageId !== undefined ? { messageId } : {}),
    deliveryCount: typeof meta.deliveryCount === 'number' ? meta.deliveryCount : 0,
  });
  if (outcome.kind === 'rejected')
    context.error(
      `backlog message ${messageId ?? '(no id)'} cannot be restored and was set aside under rejected/backlog/: ${outcome.reason}`,
    );
  else
    context.log(
      `backlog message ${messageId ?? '(no id)'} restored to ${outcome.destination}${outcome.scheduledFor ? `, scheduled for ${outcome.scheduledFor}` : ''}`,
    );
  return outcome;
}

for (const queueName of syphonQueues()) {
  app.serviceBusQueue(`syphon-${queueName}`, {
    connection: SECONDARY_CONNECTION,
    queueName,
    handler: async (message, context) => {
      await onBacklogMessage(pushdrainApp(), message, context);
    },
  });
}
