/**
 * A StorageMeter that also notes, per queue, when the first message was put and when a
 * receive first came back non-empty. The wake-latency scenario reads the gap between the
 * two: it is measured on the wire, the same way for every design, without touching their code.
 */
import type { PipelinePolicy } from '@azure/core-rest-pipeline';

import { classify, StorageMeter, type StorageService } from '../../../shared/storage/meter';

/** `/{account}/{queue}/messages…` → queue. */
function queueOf(url: string): string | undefined {
  const parts = new URL(url).pathname.split('/');
  return parts[3] === 'messages' ? parts[2] : undefined;
}

export class ProbeMeter extends StorageMeter {
  private readonly puts = new Map<string, number>();
  private readonly gets = new Map<string, number>();

  override policyFor(service: StorageService): PipelinePolicy {
    const base = super.policyFor(service);
    if (service !== 'queue') return base;
    return {
      name: base.name,
      sendRequest: async (request, next) => {
        const response = await base.sendRequest(request, next);
        const queue = queueOf(request.url);
        if (queue === undefined || response.status >= 300) return response;
        const op = classify('queue', request);
        const at = performance.timeOrigin + performance.now();
        if (op === 'queue.put' && !this.puts.has(queue)) this.puts.set(queue, at);
        // A receive's XML lists one <QueueMessage> per message; an empty one lists none.
        if (op === 'queue.get' && !this.gets.has(queue) && (response.bodyAsText ?? '').includes('<QueueMessage>'))
          this.gets.set(queue, at);
        return response;
      },
    };
  }

  /** Forget what was seen, before a trial. */
  arm(): void {
    this.puts.clear();
    this.gets.clear();
  }

  /** First put and first non-empty receive on each queue since arm(). */
  seen(): { queue: string; putAt: number; getAt: number | undefined }[] {
    return [...this.puts.entries()].map(([queue, putAt]) => ({ queue, putAt, getAt: this.gets.get(queue) }));
  }
}
