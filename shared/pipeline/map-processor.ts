/**
 * The input-queue processor (map): read the chunk blob, bill it, write the chunk result,
 * send its pointer to `results`. After each processed batch, one WorkDetected for `results`
 * wakes the reduce side: the results pointers are enqueued before that event is published.
 */
import type { ProgressRecorder } from '../batch/progress';
import { billChunk } from '../billing/bill';
import { encodeResult, type RecentResults } from '../billing/result-blob';
import type { TaxRates } from '../config/tax-rates';
import { PermanentError } from '../errors';
import { layout } from '../layout';
import { decodeChunk, parseWorkPointer, resultPointer } from '../model/chunk-codec';
import type { Notifier } from '../notify/events';
import type { BlobStore, MessageProcessor, QueueMessage, QueueStore } from '../ports';
import { cpuTurn } from '../util/cpu-turn';
import type { Finalizer } from './finalize';
import { recordPoison } from './record-poison';

export interface MapDeps {
  blobs: BlobStore;
  queues: QueueStore;
  notifier: Notifier;
  progress: ProgressRecorder;
  finalizer: Finalizer;
  /** Headers of the results written here, for this process's finalizer. */
  recent?: RecentResults;
  resultsQueue: string;
  taxRates: TaxRates;
}

export class MapProcessor implements MessageProcessor {
  /** Result bytes enqueued since the last published event, summed across dequeue tasks. */
  private produced = 0;
  private producedBatch: string | undefined;

  constructor(private readonly deps: MapDeps) {}

  async process(message: QueueMessage): Promise<void> {
    const { blobs, queues, resultsQueue, taxRates } = this.deps;
    const p = parseWorkPointer(message.text);
    const got = await blobs.read(layout.chunk(p.batchId, p.chunk));
    if (!got) throw new PermanentError(`chunk blob ${p.blob} does not exist`);
    const txns = await decodeChunk(got.body, p.sha256);
    if (txns.length !== p.count)
      throw new PermanentError(`chunk blob holds ${txns.length} transactions, pointer says ${p.count}`);
    // Billing and serializing are the second CPU-heavy step: its own loop turn (see cpuTurn).
    await cpuTurn();
    const { body, headerText } = await encodeResult(p.batchId, p.chunk, billChunk(txns, taxRates));
    // Keyed by (batchId, chunk): a redelivery overwrites the same bytes.
    await blobs.write(layout.result(p.batchId, p.chunk), body, {
      contentType: 'application/x-ndjson',
      contentEncoding: 'gzip',
    });
    this.deps.recent?.put(p.batchId, p.chunk, headerText);
    await queues.send(resultsQueue, resultPointer(p.batchId, p.chunk, p.count));
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
      await this.deps.notifier.wake([{ queue: this.deps.resultsQueue, payloadSize }], batchId || undefined);
    } catch (e) {
      this.produced += payloadSize; // publish again with the next batch (or the redelivery)
      throw e;
    }
  }

  onPoison(message: QueueMessage, reason: string): Promise<void> {
    return recordPoison(this.deps.progress, this.deps.finalizer, parseWorkPointer, message, reason);
  }
}
