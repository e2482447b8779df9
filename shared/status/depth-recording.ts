/**
 * A QueueStore that tells the status history every depth the app reads anyway (a drain's
 * fan-out decision and closing look, start-up recovery, the scaling agent's sample), so the
 * depth chart follows a batch processed while nobody watched, at no extra request.
 */
import type { DrainQueue, QueueStore } from '../ports';

export function recordingDepths(store: QueueStore, seen: (queue: string, depth: number) => void): QueueStore {
  const record = (queue: string, depth: number): number => {
    seen(queue, depth);
    return depth;
  };
  return {
    queue(name: string): DrainQueue {
      const q = store.queue(name);
      return {
        name: q.name,
        receive: (max, visibilityTimeoutSeconds) => q.receive(max, visibilityTimeoutSeconds),
        delete: (message) => q.delete(message),
        ...(q.extend ? { extend: q.extend.bind(q) } : {}),
        ...(q.handBack ? { handBack: q.handBack.bind(q) } : {}),
        depth: async () => record(name, await q.depth()),
        hasVisible: () => q.hasVisible(),
        poison: (message, reason) => q.poison(message, reason),
      };
    },
    send: (queue, body) => store.send(queue, body),
    depth: async (queue) => record(queue, await store.depth(queue)),
    peek: (queue, max) => store.peek(queue, max),
  };
}
