/** A poisoned pointer fails its chunk on the batch, which may settle (and fail) the batch. */
import type { ProgressRecorder } from '../batch/progress';
import type { QueueMessage } from '../ports';
import type { Finalizer } from './finalize';

export async function recordPoison(
  progress: ProgressRecorder,
  finalizer: Finalizer,
  parse: (text: string) => { batchId: string; chunk: number },
  message: QueueMessage,
  reason: string,
): Promise<void> {
  let p;
  try {
    p = parse(message.text);
  } catch {
    return; // not attributable to any batch
  }
  await finalizer.ifSettled(await progress.record(p.batchId, { chunk: p.chunk, done: false, reason }));
}
