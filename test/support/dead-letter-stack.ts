/**
 * Dead letters on the local stack, made the way Service Bus makes them: every delivery of an
 * event fails (here because the drain slots' container is gone: a Storage failure that is not
 * transient, as a revoked role would be in Azure) until the broker dead-letters it after its
 * max delivery count.
 */
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';

import { TOPIC } from '../../shared/names';
import type { LocalStack } from './local-stack';

/** The drain slots' container; delete it to make drains fail, create it again to fix them. */
export function slotContainer(stack: LocalStack): ContainerClient {
  return BlobServiceClient.fromConnectionString(stack.azurite.connectionString).getContainerClient(
    `${stack.prefix}leases`,
  );
}

/**
 * Fan-out WorkDetected events for these queues: they go straight for a drain slot (no probe of
 * the queue first, which drains a small batch without one), so a missing slot store fails them.
 * A queue with nothing visible is skipped by its event (completed, not failed).
 */
export async function wakeForSlots(stack: LocalStack, queues: readonly string[]): Promise<void> {
  const sender = stack.bus.client().createSender(TOPIC);
  try {
    await sender.sendMessages(
      queues.map((queueName) => ({
        body: { storageAccount: 'devstoreaccount1', queueName, payloadSize: 1, role: 'input', fanOut: true },
        applicationProperties: { role: 'input', queueName },
      })),
    );
  } finally {
    await sender.close();
  }
}
