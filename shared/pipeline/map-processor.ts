/**
 * The input-queue processor (map): read the chunk blob, bill it, write the chunk result,
 * send its pointer to `results`. After each processed batch, one WorkDetected(role output)
 * wakes the aggregator: the results pointers are enqueued before that event is published.
 */
import { billChunk } from '../billing/bill';
import { encodeResult } from '../billing/result-blob';
import type { MessageProcessor, QueueMessage } from '../drain/types';
import { PermanentError } from '../errors';
import { decodeChunk } from '../ingest/chunks';
import { parseWorkPointer, resultBlobName, type ResultPointer } from '../model/pointers';
import { sendPointer } from '../queue/storage-queue';
import { readBlob, writeBlob } from '../storage/blob-io';
import type { PipelineContext } from './context';

export class MapProcessor implements MessageProcessor {
  /** Result bytes enqueued since the last published event, summed across dequeue tasks. */
  private produced = 0;
  private producedBatch: string | undefined;

  constructor(private readonly ctx: PipelineContext) {}

  async process(message: QueueMessage): Promise<void> {
    const p = parseWorkPointer(message.text);
    const got = await readBlob(this.ctx.container('work').getBlockBlobClient(p.blob));
    if (!got) throw new PermanentError(`chunk blob ${p.blob} does not exist`);
    const txns = await decodeChunk(got.body, p.sha256);
    if (txns.length !== p.count) throw new PermanentError(`chunk blob holds ${txns.length} transactions, pointer says ${p.count}`);
    const body = await encodeResult(p.batchId, p.chunk, billChunk(txns, this.ctx.taxRates));
    // Keyed by (batchId, chunk): a redelivery overwrites the same bytes.
    await writeBlob(this.ctx.container('results').getBlockBlobClient(resultBlobName(p.batchId, p.chunk)), body, { contentType: 'application/x-ndjson', contentEncoding: 'gzip' });
    const pointer: ResultPointer = { v: 1, batchId: p.batchId, chunk: p.chunk, blob: resultBlobName(p.batchId, p.chunk), count: p.count };
    await sendPointer(this.ctx.queues.getQueueClient(this.ctx.names.resultsQueue), pointer);
    this.produced += body.length;
    this.producedBatch = this.producedBatch === undefined || this.producedBatch === p.batchId ? p.batchId : '';
  }

  async afterBatch(): Promise<void> {
    if (this.produced === 0) return;
    const payloadSize = this.produced;
    const batchId = this.producedBatch;
    this.produced = 0;
    this.producedBatch = undefined;
    try {
      await this.ctx.publisher.publish([
        { storageAccount: this.ctx.storageAccount, queueName: this.ctx.names.resultsQueue, payloadSize, role: 'output', ...(batchId ? { batchId } : {}) },
      ]);
    } catch (e) {
      this.produced += payloadSize; // publish again with the next batch (or the redelivery)
      throw e;
    }
  }

  async onPoison(message: QueueMessage, reason: string): Promise<void> {
    let p;
    try {
      p = parseWorkPointer(message.text);
    } catch {
      return; // not attributable to any batch
    }
    const m = await this.ctx.progress.record(p.batchId, { chunk: p.chunk, done: false, reason });
    await this.ctx.finalizeIfSettled(m);
  }
}
