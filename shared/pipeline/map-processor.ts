/**
 * The input-queue processor (map): read the chunk blob, bill it, write the chunk result (with the
 * control sums of its inputs), send its pointer to `results`. After each processed batch, one WorkDetected for `results`
 * wakes the reduce side: the results pointers are enqueued before that event is published.
 * A batch's only chunk (`sole` on its pointer) is folded into the manifest here instead: with
 * one chunk there is nothing for the reduce side to coalesce, and the round trip through
 * `results` (a put, a receive, a delete and an event) is saved.
 */
import type { ManifestStore } from '../batch/manifest-store';
import type { ProgressRecorder } from '../batch/progress';
import { billChunk } from '../billing/bill';
import { encodeResult, type RecentResults } from '../billing/result-blob';
import type { TaxRates } from '../config/tax-rates';
import { withBatch } from '../cost/usage-scope';
import { PermanentError } from '../errors';
import { layout } from '../layout';
import { decodeChunk, parseWorkPointer, resultPointer, type WorkPointer } from '../model/chunk-codec';
import { controlSumsOf } from '../model/control-totals';
import type { Notifier } from '../notify/notifier';
import type { BlobStore, MessageProcessor, QueueMessage, QueueStore } from '../ports';
import { NO_TELEMETRY, type Telemetry } from '../telemetry/telemetry';
import { cpuTurn } from '../util/cpu-turn';
import type { MemoryBudget } from '../util/memory-budget';
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
  /** @defaultValue NO_TELEMETRY */
  telemetry?: Telemetry;
  /** The clock of the billing times the result pointers carry. @defaultValue Date.now */
  now?: () => number;
  /**
   * A batch's only chunk waits for its ingest's accept (see untilAccepted); without it, it is
   * folded at once. @defaultValue undefined
   */
  acceptance?: { manifests: ManifestStore; sleep: (ms: number) => Promise<void> };
  /**
   * The map's part of the process's budget (MAP_BYTES_PER_CORE a core): a chunk is read only once
   * its decoded size fits. Absent: unbounded.
   */
  memory?: MemoryBudget;
}

/**
 * Heap one transaction of a chunk takes while it is mapped: decoded, the lines' text stays live
 * beside the objects parsed from it (about 180 bytes a transaction measured, 240 in a drain's
 * heap), plus the gunzip buffers and the result being built.
 */
export const MAP_BYTES_PER_TRANSACTION = 400;

/**
 * Map work one core keeps in flight (one 20,000-transaction chunk): decoding and billing are CPU
 * work, so chunks beyond what the cores bill at once only wait in the heap. Where memory was to
 * spare, the memory budget let a drain decode a whole 1,000,000-transaction batch at once: 857 MB
 * peak RSS, against 349 MB with this bound, and the batch completed sooner (bench scenario 6b).
 */
export const MAP_BYTES_PER_CORE = 8 * 1024 * 1024;

/**
 * How long a sole chunk waits for its ingest's accept, read by read: about 1.5 s in all, well
 * inside the visibility timeout; past it the chunk is folded into the ingesting manifest as before.
 */
const ACCEPT_WAITS_MS = [100, 200, 400, 800] as const;

export class MapProcessor implements MessageProcessor {
  /** Result bytes enqueued since the last published event, summed across dequeue tasks. */
  private produced = 0;
  private producedBatch: string | undefined;
  private producedTrace: string | undefined;
  private readonly telemetry: Telemetry;

  constructor(private readonly deps: MapDeps) {
    this.telemetry = deps.telemetry ?? NO_TELEMETRY;
  }

  /** One span per chunk, a child of the batch's ingest span; its context travels on the result pointer. */
  async process(message: QueueMessage): Promise<void> {
    const p = parseWorkPointer(message.text);
    return withBatch(p.batchId, 'map', () => this.billInSpan(p));
  }

  private async billInSpan(p: WorkPointer): Promise<void> {
    if (!this.telemetry.enabled) return this.bill(p, p.traceparent);
    const span = this.telemetry.startSpan('pushdrain.map', {
      parent: p.traceparent,
      attributes: { 'pushdrain.batch_id': p.batchId, 'pushdrain.chunk': p.chunk, 'pushdrain.transactions': p.count },
    });
    try {
      await this.bill(p, span.traceparent);
      this.telemetry.metrics.billed(p.count);
    } catch (e) {
      span.fail(e);
      throw e;
    } finally {
      span.end();
    }
  }

  private async bill(p: WorkPointer, traceparent: string | undefined): Promise<void> {
    const { blobs, queues, resultsQueue } = this.deps;
    const now = this.deps.now ?? Date.now;
    const started = now();
    const release = await this.deps.memory?.reserve(p.count * MAP_BYTES_PER_TRANSACTION);
    let result: { body: Buffer; headerText: string };
    try {
      result = await this.billed(p);
    } finally {
      release?.();
    }
    const { body, headerText } = result;
    // Keyed by (batchId, chunk): a redelivery overwrites the same bytes.
    await blobs.write(layout.result(p.batchId, p.chunk), body, {
      contentType: 'application/x-ndjson',
      contentEncoding: 'gzip',
    });
    this.deps.recent?.put(p.batchId, p.chunk, headerText);
    const billedAt = now();
    if (p.sole) return this.foldSole(p, { billedAt, mapMs: billedAt - started });
    await queues.send(
      resultsQueue,
      resultPointer({
        batchId: p.batchId,
        chunk: p.chunk,
        count: p.count,
        traceparent,
        billed: { billedAt, mapMs: billedAt - started },
      }),
    );
    this.produced += body.length;
    const same = this.producedBatch === undefined || this.producedBatch === p.batchId;
    this.producedBatch = same ? p.batchId : '';
    this.producedTrace = same ? traceparent : undefined;
  }

  /** The chunk read, decoded and billed: its result, with nothing of its transactions left live. */
  private async billed(p: WorkPointer): Promise<{ body: Buffer; headerText: string }> {
    const got = await this.deps.blobs.read(layout.chunk(p.batchId, p.chunk));
    if (!got) throw new PermanentError(`chunk blob ${p.blob} does not exist`);
    const txns = await decodeChunk(got.body, p.sha256);
    if (txns.length !== p.count)
      throw new PermanentError(`chunk blob holds ${txns.length} transactions, pointer says ${p.count}`);
    // Billing and serializing are the second CPU-heavy step: its own loop turn (see cpuTurn).
    await cpuTurn();
    // The inputs are counted apart from billing: the finalizer holds one against the other.
    return encodeResult(p.batchId, p.chunk, billChunk(txns, this.deps.taxRates), controlSumsOf(txns));
  }

  /**
   * A batch's only chunk is folded here, as the reduce step would fold its result pointer: the
   * result blob is written first, and the input message is deleted only after the fold, so a crash
   * in between redoes the chunk (its result is the same bytes, and the fold counts it once).
   */
  private async foldSole(p: WorkPointer, billed: { billedAt: number; mapMs: number }): Promise<void> {
    const { progress, finalizer } = this.deps;
    await this.untilAccepted(p.batchId);
    const m = await progress.record(p.batchId, { chunk: p.chunk, done: true, billed });
    // No manifest (gone), or an ingest that never answered 202 (abandoned): nothing to report.
    if (!m || m.state === 'abandoned') return;
    await finalizer.ifSettled(m);
  }

  /**
   * The ingest writes its accept before its WorkDetected event, so a drain woken by that event
   * finds the accept on its first read. A drain already running (woken by another batch) can
   * still reach the pointer first: folding into the ingesting manifest would cost the ingest a
   * refused accept, a read and the write again, and leave the finalize to it, which must read
   * this chunk's result blob back. Waiting for the accept costs a read per wait, and the fold
   * writes on the version read (no second read), completing the batch here. When this process
   * wrote the manifest itself, the ingest and the fold share its version in memory: no wait.
   */
  private async untilAccepted(batchId: string): Promise<void> {
    const wait = this.deps.acceptance;
    if (!wait || wait.manifests.knownState(batchId) !== undefined) return;
    for (let i = 0; ; i++) {
      const got = await wait.manifests.read(batchId);
      if (got?.manifest.state !== 'ingesting' || i >= ACCEPT_WAITS_MS.length) return;
      await wait.sleep(ACCEPT_WAITS_MS[i]!);
    }
  }

  async afterBatch(): Promise<void> {
    if (this.produced === 0) return;
    const payloadSize = this.produced;
    const batchId = this.producedBatch;
    const traceparent = this.producedTrace;
    this.produced = 0;
    this.producedBatch = undefined;
    this.producedTrace = undefined;
    try {
      await this.deps.notifier.wake(
        [{ queue: this.deps.resultsQueue, payloadSize }],
        batchId || undefined,
        traceparent,
      );
    } catch (e) {
      this.produced += payloadSize; // publish again with the next batch (or the redelivery)
      throw e;
    }
  }

  onPoison(message: QueueMessage, reason: string): Promise<void> {
    const { progress, finalizer } = this.deps;
    return recordPoison(
      { progress, finalizer, telemetry: this.telemetry, stage: 'map' },
      parseWorkPointer,
      message,
      reason,
    );
  }
}
