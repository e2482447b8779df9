/**
 * Creates every queue and container the app uses, as infra/ does in Azure: the local stack's one
 * provisioning step, run before it serves (`npm start`, the tests, the bench). The app itself never
 * creates one (docs/DESIGN.md, "What a cold instance asks for"). Idempotent: an existing entity is
 * left as it is, at one request each.
 */
import type { StorageConnection } from '../../shared/config/connections';
import type { Settings } from '../../shared/config/settings';
import { CONTAINERS, entityNames } from '../../shared/names';
import { createStorageClients } from '../../shared/storage/clients';
import { StorageMeter } from '../../shared/storage/meter';

/** What was asked for: every queue and container name, prefix included. */
export interface Provisioned {
  queues: string[];
  containers: string[];
}

/** Queues and containers of `settings` (its prefix and partitions), created where missing. */
export async function provisionStorage(settings: Settings, meter = new StorageMeter()): Promise<Provisioned> {
  const names = entityNames(settings.namePrefix, settings.tuning.partitions);
  const clients = createStorageClients(settings.storage, meter);
  const queues = names.allQueues();
  const containers = CONTAINERS.map((k) => names.container(k));
  await Promise.all([
    ...containers.map((c) => clients.blobs.getContainerClient(c).createIfNotExists()),
    ...queues.map((q) => clients.queues.getQueueClient(q).createIfNotExists()),
  ]);
  return { queues, containers };
}

/**
 * Storage the local stack provisions: an emulator on this machine (embedded Azurite, a test's).
 * A real account is infra/'s to provision; `npm start` against one leaves it as it is.
 */
export function isLocalStorage(connection: StorageConnection): boolean {
  if (connection.kind === 'identity') return [connection.blobServiceUri, connection.queueServiceUri].every(loopback);
  if (/usedevelopmentstorage\s*=\s*true/i.test(connection.connectionString)) return true;
  const endpoints = [...connection.connectionString.matchAll(/(?:Blob|Queue)Endpoint\s*=\s*([^;]+)/gi)].map(
    (m) => m[1]!,
  );
  return endpoints.length > 0 && endpoints.every(loopback);
}

function loopback(uri: string): boolean {
  try {
    const host = new URL(uri.trim()).hostname;
    return host === '127.0.0.1' || host === 'localhost' || host === '[::1]';
  } catch {
    return false;
  }
}
