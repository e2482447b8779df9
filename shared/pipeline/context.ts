/** Everything the pipeline steps share, built once by the composition root (shared/runtime.ts). */
import type { ContainerClient } from '@azure/storage-blob';
import type { QueueServiceClient } from '@azure/storage-queue';

import type { Manifest } from '../batch/manifest';
import type { ManifestStore } from '../batch/manifest-store';
import type { ProgressRecorder } from '../batch/progress';
import type { Tuning } from '../config/settings';
import type { TaxRates } from '../config/tax-rates';
import type { DrainLogger } from '../drain/types';
import type { ContainerKey, EntityNames } from '../names';
import type { WorkPublisher } from '../notify/events';

export interface PipelineContext {
  names: EntityNames;
  container(key: ContainerKey): ContainerClient;
  queues: QueueServiceClient;
  manifests: ManifestStore;
  progress: ProgressRecorder;
  publisher: WorkPublisher;
  taxRates: TaxRates;
  tuning: Tuning;
  storageAccount: string;
  log: DrainLogger;
  now(): number;
  /** Writes the report and completes a batch once it is settled (see finalize.ts). */
  finalizeIfSettled(m: Manifest | undefined): Promise<void>;
}
