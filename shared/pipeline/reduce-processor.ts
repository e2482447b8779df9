/**
 * The results-queue processor (reduce): mark the chunk done on its batch, once, however
 * often the message is delivered; when the batch is settled, finalize it.
 */
import type { ProgressRecorder } from '../batch/progress';
import { withBatch } from '../cost/usage-scope';
import { parseResultPointer, type ResultPointer } from '../model/chunk-codec';
import type { Logger, MessageProcessor, QueueMessage } from '../ports';
import { NO_TELEMETRY, type Telemetry } from '../telemetry/telemetry';
import type { Finalizer } from './finalize';
import { recordPoison } from './record-poison';

export class ReduceProcessor implements MessageProcessor {
  constructor(
    private readonly progress: ProgressRecorder,
    private readonly finalizer: Finalizer,
    private readonly log: Logger,
    private readonly telemetry: Telemetry = NO_TELEMETRY,
  ) {}

  /** One span per result, a child of its chunk's map span (the result pointer carries its context). */
  async process(message: QueueMessage): Promise<void> {
    const p = parseResultPointer(message.text);
    await withBatch(p.batchId, 'reduce', () => {
      if (!this.telemetry.enabled) return this.fold(p);
      return this.telemetry.inSpan(
        'pushdrain.reduce',
        { parent: p.traceparent, attributes: { 'pushdrain.batch_id': p.batchId, 'pushdrain.chunk': p.chunk } },
        () => this.fold(p),
      );
    });
  }

  private async fold(p: ResultPointer): Promise<void> {
    const billed =
      p.billedAt !== undefined && p.mapMs !== undefined ? { billedAt: p.billedAt, mapMs: p.mapMs } : undefined;
    const m = await this.progress.record(p.batchId, { chunk: p.chunk, done: true, ...(billed ? { billed } : {}) });
    if (!m) {
      this.log.warn(`results for unknown batch ${p.batchId} (chunk ${p.chunk}) dropped`);
      return;
    }
    if (m.state === 'abandoned') return; // an ingest that never answered 202: nothing to report
    await this.finalizer.ifSettled(m);
  }

  onPoison(message: QueueMessage, reason: string): Promise<void> {
    const deps = {
      progress: this.progress,
      finalizer: this.finalizer,
      telemetry: this.telemetry,
      stage: 'reduce' as const,
    };
    return recordPoison(deps, parseResultPointer, message, reason);
  }
}
