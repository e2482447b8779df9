/**
 * Builds the Storage clients once, from validated settings: connection string or managed
 * identity, function-friendly retry options, and the meter on every request attempt.
 */
import type { TokenCredential } from '@azure/core-auth';
import type { Pipeline, PipelinePolicy } from '@azure/core-rest-pipeline';
import { DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';
import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';

import type { IdentityOptions, StorageConnection } from '../config/connections';
import type { StorageMeter } from './meter';

export interface StorageClients {
  blobs: BlobServiceClient;
  queues: QueueServiceClient;
}

/** Seconds a single attempt may take; Azure's server timeout for most operations is 30 s. */
const TRY_TIMEOUT_MS = 30_000;

/** Short retries: a function should not sit out the SDK's multi-second default delays. */
const RETRY = { maxTries: 4, retryDelayInMs: 200, maxRetryDelayInMs: 3_000, tryTimeoutInMs: TRY_TIMEOUT_MS };

export function credentialFor(options: IdentityOptions): TokenCredential {
  if (options.credential?.toLowerCase() === 'managedidentity') {
    return options.clientId ? new ManagedIdentityCredential({ clientId: options.clientId }) : new ManagedIdentityCredential();
  }
  return new DefaultAzureCredential(options.clientId ? { managedIdentityClientId: options.clientId } : {});
}

/**
 * Puts the meter below the retry policy of the client's core pipeline, once. Clients derived
 * with getContainerClient/getQueueClient share that pipeline, so they are metered too.
 * (Passing it as `additionalPolicies` adds it twice and the SDK rejects duplicate names.)
 */
function attachMeter(client: BlobServiceClient | QueueServiceClient, policy: PipelinePolicy): void {
  const core = (client as unknown as { storageClientContext?: { pipeline?: Pipeline } }).storageClientContext?.pipeline;
  if (!core || typeof core.addPolicy !== 'function') throw new Error('storage SDK pipeline shape changed: cannot attach the transaction meter');
  if (!core.getOrderedPolicies().some((p) => p.name === policy.name)) core.addPolicy(policy, { afterPhase: 'Retry' });
}

export function createStorageClients(connection: StorageConnection, meter: StorageMeter): StorageClients {
  const options = { retryOptions: RETRY };
  let clients: StorageClients;
  if (connection.kind === 'connectionString') {
    clients = {
      blobs: BlobServiceClient.fromConnectionString(connection.connectionString, options),
      queues: QueueServiceClient.fromConnectionString(connection.connectionString, options),
    };
  } else {
    const credential = credentialFor(connection);
    clients = {
      blobs: new BlobServiceClient(connection.blobServiceUri, credential, options),
      queues: new QueueServiceClient(connection.queueServiceUri, credential, options),
    };
  }
  attachMeter(clients.blobs, meter.policyFor('blob'));
  attachMeter(clients.queues, meter.policyFor('queue'));
  return clients;
}
