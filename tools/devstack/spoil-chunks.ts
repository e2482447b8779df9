/**
 * `node dist/tools/devstack/spoil-chunks.js <batchId>`: makes a batch fail on purpose in a local run, to
 * see the poison path (poison queue, failed batch, status page, `pushdrain report`, redrive).
 * It overwrites the batch's chunk blobs not billed yet with bytes that are not gzip, so each
 * one's pointer fails its checksum and goes to `{queue}-poison`. Local only: it refuses any
 * Storage account but Azurite's development account, and the app has no such switch at all.
 */
import { BlobServiceClient } from '@azure/storage-blob';

import { layout } from '../../shared/layout';
import { entityNames } from '../../shared/names';
import { azuriteConnectionString, DEV_ACCOUNT } from './azurite';

export interface SpoilOptions {
  blobs: BlobServiceClient;
  batchId: string;
  /** PUSHDRAIN_NAME_PREFIX of the app. @defaultValue '' */
  prefix?: string;
}

/** Spoils every chunk of the batch that has no result yet; returns their numbers. */
export async function spoilChunks({ blobs, batchId, prefix = '' }: SpoilOptions): Promise<number[]> {
  const names = entityNames(prefix, 1);
  const work = blobs.getContainerClient(names.container('work'));
  const results = blobs.getContainerClient(names.container('results'));
  const spoiled: number[] = [];
  const dir = layout.chunk(batchId, 0).name.replace(/0\.ndjson\.gz$/, '');
  // Bounded by the batch's own chunks (a batch holds at most 1,000,000 transactions).
  for await (const blob of work.listBlobsFlat({ prefix: dir })) {
    const chunk = Number(blob.name.slice(dir.length).replace(/\.ndjson\.gz$/, ''));
    if (!Number.isInteger(chunk)) continue;
    if (await results.getBlockBlobClient(layout.result(batchId, chunk).name).exists()) continue;
    await work
      .getBlockBlobClient(blob.name)
      .uploadData(Buffer.from('not gzip: spoiled on purpose by tools/devstack/spoil-chunks'));
    spoiled.push(chunk);
  }
  return spoiled.sort((a, b) => a - b);
}

async function main(): Promise<void> {
  const batchId = process.argv[2];
  if (!batchId) throw new Error('usage: node dist/tools/devstack/spoil-chunks.js <batchId>');
  const env = process.env;
  const connection =
    env.StorageConnection ||
    azuriteConnectionString(Number(env.AZURITE_BLOB_PORT || 10000), Number(env.AZURITE_QUEUE_PORT || 10001));
  if (!connection.includes(`AccountName=${DEV_ACCOUNT};`))
    throw new Error(`spoil-chunks works only on the local Azurite account (${DEV_ACCOUNT})`);
  const spoiled = await spoilChunks({
    blobs: BlobServiceClient.fromConnectionString(connection),
    batchId,
    prefix: env.PUSHDRAIN_NAME_PREFIX ?? '',
  });
  console.log(
    spoiled.length > 0
      ? `spoiled chunk(s) ${spoiled.join(', ')} of ${batchId}: they will go to poison and the batch will end failed`
      : `no chunk of ${batchId} is left to spoil (all billed already, or no such batch)`,
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
