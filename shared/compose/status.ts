/**
 * Watching the app: the status report (through clients of its own meter: watching is not what
 * the app costs), the Service Bus inspector and the dead-letter counts health shows.
 */
import { ManifestListing } from '../batch/batch-list';
import { ManifestStore } from '../batch/manifest-store';
import type { BusInspector } from '../notify/inspection';
import { AzureQueueStore } from '../queue/storage-queue';
import { DeadLetterTally } from '../status/dead-letter-tally';
import { DeliveryStatusReader } from '../status/delivery-status';
import { StatusReporter } from '../status/status-report';
import { AzureBlobStore } from '../storage/azure-blob-store';
import { createStorageClients } from '../storage/clients';
import { StorageMeter } from '../storage/meter';
import type { AppCore } from './core';
import type { DrainParts } from './drains';

export interface StatusParts {
  status: StatusReporter;
  inspector: BusInspector | undefined;
  deadLetterTally: DeadLetterTally | undefined;
}

export function composeStatus(core: AppCore, { drains }: Pick<DrainParts, 'drains'>): StatusParts {
  const { settings, names, meter, missing, clock, now, log, activity, telemetry, bus } = core;
  const statusMeter = new StorageMeter();
  const statusClients = createStorageClients(settings.storage, statusMeter, { missing });
  const statusQueues = new AzureQueueStore(statusClients.queues, names.poisonQueue, now);
  const statusManifests = new ManifestStore(new AzureBlobStore(statusClients.blobs, names.container));
  const deadLetters = bus.deadLetters;
  const tally =
    deadLetters || bus.inspector
      ? new DeadLetterTally({
          count: deadLetters && (() => deadLetters.count()),
          now,
          log,
          onCount: (total) => telemetry.metrics.deadLetters(total),
        })
      : undefined;
  const inspector = bus.inspector && tally ? tally.recording(bus.inspector) : bus.inspector;
  const status = new StatusReporter({
    queues: statusQueues,
    names,
    batches: new ManifestListing(new AzureBlobStore(statusClients.blobs, names.container), statusManifests),
    inspector,
    drains,
    activity,
    meter,
    statusMeter,
    now,
    instanceId: `i-${Math.floor(clock.random() * 0x1_0000_0000)
      .toString(16)
      .padStart(8, '0')}`,
    deliveries: new DeliveryStatusReader({
      manifests: statusManifests,
      queues: statusQueues,
      poisonQueue: names.deliveriesPoisonQueue,
      now,
    }),
  });
  return { status, inspector, deadLetterTally: tally };
}
