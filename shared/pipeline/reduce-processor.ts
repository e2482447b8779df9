/**
 * The results-queue processor (reduce): mark the chunk done on its batch, once, however
 * often the message is delivered; when the batch is settled, finalize it.
 */
import type { MessageProcessor, QueueMessage } from '../drain/types';
import { parseResultPointer } from '../model/pointers';
import type { PipelineContext } from './context';

export class ReduceProcessor implements MessageProcessor {
  constructor(private readonly ctx: PipelineContext) {}

  async process(message: QueueMessage): Promise<void> {
    const p = parseResultPointer(message.text);
    const m = await this.ctx.progress.record(p.batchId, { chunk: p.chunk, done: true });
    if (!m) {
      this.ctx.log.warn(`results for unknown batch ${p.batchId} (chunk ${p.chunk}) dropped`);
      return;
    }
    if (m.state === 'abandoned') return; // an ingest that never answered 202: nothing to report
    await this.ctx.finalizeIfSettled(m);
  }

  async onPoison(message: QueueMessage, reason: string): Promise<void> {
    let p;
    try {
      p = parseResultPointer(message.text);
    } catch {
      return;
    }
    const m = await this.ctx.progress.record(p.batchId, { chunk: p.chunk, done: false, reason });
    await this.ctx.finalizeIfSettled(m);
  }
}
