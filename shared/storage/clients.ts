/**
 * Builds the Storage clients once, from validated settings: connection string or managed
 * identity, function-friendly retry options, and on every request attempt the wait for an
 * endpoint known to be restarting (shared/storage/endpoint-outages.ts), the stall timeout
 * (shared/storage/stall-timeout.ts) and the meter; for the app's clients, on each operation, a
 * missing queue or container turned into NotProvisionedError (shared/storage/missing-entities.ts).
 */
import type { AddPipelineOptions, Pipeline, PipelinePolicy } from '@azure/core-rest-pipeline';
import type * as Identity from '@azure/identity';
import type { TokenCredential } from '@azure/identity';
import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';

import type { IdentityOptions, StorageConnection } from '../config/connections';
import { endpointOutagePolicy } from './endpoint-outages';
import type { StorageMeter } from './meter';
import type { MissingEntities } from './missing-entities';
import { stallTimeoutPolicy } from './stall-timeout';

export interface StorageClients {
  blobs: BlobServiceClient;
  queues: QueueServiceClient;
}

/** Seconds a single attempt may take; Azure's server timeout for most operations is 30 s. */
const TRY_TIMEOUT_MS = 30_000;

/** Short retries: a function should not sit out the SDK's multi-second default delays. */
const RETRY = { maxTries: 4, retryDelayInMs: 200, maxRetryDelayInMs: 3_000, tryTimeoutInMs: TRY_TIMEOUT_MS };

/**
 * An attempt with no progress for this long is abandoned and retried. Above the server's own
 * per-try timeout (a healthy server answers, if only with OperationTimedOut, within it), so what
 * trips it is a dead connection, not a slow operation.
 */
const STALL_TIMEOUT_MS = TRY_TIMEOUT_MS + 10_000;

export interface StorageClientOptions {
  /** Time without progress after which an attempt is abandoned and retried. @defaultValue STALL_TIMEOUT_MS (40 s) */
  stallTimeoutMs?: number;
  /**
   * Where a missing queue or container is recorded and turned into NotProvisionedError (the app's
   * clients). @defaultValue none: the SDK's own 404 (tools that create or delete entities)
   */
  missing?: MissingEntities;
}

export function credentialFor(options: IdentityOptions): TokenCredential {
  // Required here, not at import: a connection string needs none of it (45 modules, with MSAL),
  // and every cold start paid for loading it (BENCHMARKS.md, "Start to first message").
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { DefaultAzureCredential, ManagedIdentityCredential } = require('@azure/identity') as typeof Identity;
  if (options.credential?.toLowerCase() === 'managedidentity') {
    return options.clientId
      ? new ManagedIdentityCredential({ clientId: options.clientId })
      : new ManagedIdentityCredential();
  }
  return new DefaultAzureCredential(options.clientId ? { managedIdentityClientId: options.clientId } : {});
}

/**
 * Puts a policy below the retry policy of the client's core pipeline, once, so it sees every
 * attempt. Clients derived with getContainerClient/getQueueClient share that pipeline.
 * (Passing it as `additionalPolicies` adds it twice and the SDK rejects duplicate names.)
 */
function attachPerAttempt(client: BlobServiceClient | QueueServiceClient, policy: PipelinePolicy): void {
  attach(client, policy, { afterPhase: 'Retry' });
}

/**
 * Puts a policy between deserialization and the retry policy: it sees each operation's final raw
 * response, once, before the SDK turns an error status into a RestError.
 */
function attachPerOperation(client: BlobServiceClient | QueueServiceClient, policy: PipelinePolicy): void {
  attach(client, policy, { afterPhase: 'Deserialize' });
}

function attach(
  client: BlobServiceClient | QueueServiceClient,
  policy: PipelinePolicy,
  options: AddPipelineOptions,
): void {
  // The blob client's context is the core client; the queue client's (a generated client in
  // 12.32) holds it as queuesClient, whose pipeline its derived queue clients share.
  const context = (
    client as unknown as { storageClientContext?: { pipeline?: Pipeline; queuesClient?: { pipeline?: Pipeline } } }
  ).storageClientContext;
  const core = context?.pipeline ?? context?.queuesClient?.pipeline;
  if (!core || typeof core.addPolicy !== 'function')
    throw new Error(`storage SDK pipeline shape changed: cannot attach ${policy.name}`);
  if (!core.getOrderedPolicies().some((p) => p.name === policy.name)) core.addPolicy(policy, options);
}

export function createStorageClients(
  connection: StorageConnection,
  meter: StorageMeter,
  tuning: StorageClientOptions = {},
): StorageClients {
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
  // The outage wait before the stall timer: time spent waiting for a restart is not a stall.
  const outage = endpointOutagePolicy();
  const stall = stallTimeoutPolicy(tuning.stallTimeoutMs ?? STALL_TIMEOUT_MS);
  for (const client of [clients.blobs, clients.queues]) {
    attachPerAttempt(client, outage);
    attachPerAttempt(client, stall);
  }
  attachPerAttempt(clients.blobs, meter.policyFor('blob'));
  attachPerAttempt(clients.queues, meter.policyFor('queue'));
  if (tuning.missing) {
    const missing = tuning.missing.policy(connection.accountName);
    attachPerOperation(clients.blobs, missing);
    attachPerOperation(clients.queues, missing);
  }
  return clients;
}
