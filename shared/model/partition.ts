import { createHash } from 'node:crypto';

/**
 * Chunk i of a batch goes to partition (offset + i) mod P, with the offset from the batch id:
 * a batch of at least P chunks uses every partition, and small batches don't all land on 0.
 */
export function partitionOf(batchId: string, chunk: number, partitions: number): number {
  const offset = createHash('sha256').update(batchId).digest().readUInt32BE(0) % partitions;
  return (offset + chunk) % partitions;
}
