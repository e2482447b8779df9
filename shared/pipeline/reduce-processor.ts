/**
 * The results-queue processor (reduce): mark the chunk done on its batch, once, however
 * often the message is delivered; when the batch is settled, finalize it.
 */
import type { ProgressRecorder } from '../batch/progress';
import { parseResultPointer } from '../model/chunk-codec';
import type { Logger, MessageProcessor, QueueMessage } from '../ports';
import type { Finalizer } from './finalize';
import { recordPoison } from './record-poison';

export class ReduceProcessor implements MessageProcessor {
  constructor(
    private readonly progress: ProgressRecorder,
    private readonly finalizer: Finalizer,
    private readonly log: Logger,
  ) {}

  async process(message: QueueMessage): Promise<void> {
    const p = parseResultPointer(message.text);
    const m = await this.progress.record(p.batchId, { chunk: p.chunk, done: true });
    if (!m) {
      this.log.warn(`results for unknown batch ${p.batchId} (chunk ${p.chunk}) dropped`);
      return;
    }
    if (m.state === 'abandoned') return; // an ingest that never answered 202: nothing to report
    await this.finalizer.ifSettled(m);
  }

  onPoison(message: QueueMessage, reason: string): Promise<void> {
    return recordPoison(this.progress, this.finalizer, parseResultPointer, message, reason);
  }
}
