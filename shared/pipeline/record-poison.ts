/** A poisoned pointer fails its chunk on the batch, which may settle (and fail) the batch. */
import type { ProgressRecorder } from '../batch/progress';
import type { QueueMessage } from '../ports';
import type { Telemetry } from '../telemetry/telemetry';
import type { Finalizer } from './finalize';

export interface PoisonDeps {
  progress: ProgressRecorder;
  finalizer: Finalizer;
  telemetry: Telemetry;
  /** The stage whose queue the message came from (a metric attribute). */
  stage: 'map' | 'reduce';
}

export async function recordPoison(
  deps: PoisonDeps,
  parse: (text: string) => { batchId: string; chunk: number; traceparent?: string },
  message: QueueMessage,
  reason: string,
): Promise<void> {
  deps.telemetry.metrics.poisoned(deps.stage);
  let p;
  try {
    p = parse(message.text);
  } catch {
    return; // not attributable to any batch
  }
  // An operator following the batch's trace sees where its chunk went.
  deps.telemetry.batchEvent(p.traceparent, 'pushdrain.poison', {
    'pushdrain.stage': deps.stage,
    'pushdrain.chunk': p.chunk,
    'pushdrain.dequeue_count': message.dequeueCount,
    'pushdrain.reason': reason.slice(0, 200),
  });
  await deps.finalizer.ifSettled(await deps.progress.record(p.batchId, { chunk: p.chunk, done: false, reason }));
}
