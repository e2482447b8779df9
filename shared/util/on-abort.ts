/**
 * Calls `fn` when `signal` aborts, through ONE listener per signal however many callers wait on
 * it. The host's shutdown signal lives as long as the process while drains come and go, many at
 * once under load (up to maxConcurrentCalls drain invocations, several per queue when a drain
 * can no longer be joined): a listener of its own per task group put 11 on the signal and
 * printed MaxListenersExceededWarning. Here the signal holds one listener, whatever the load,
 * and the returned function removes the caller's callback (and the listener with the last one).
 */
const waiting = new WeakMap<AbortSignal, { callbacks: Set<() => void>; listener: () => void }>();

export function onAbort(signal: AbortSignal | undefined, fn: () => void): () => void {
  if (!signal) return () => {};
  if (signal.aborted) {
    fn();
    return () => {};
  }
  let entry = waiting.get(signal);
  if (!entry) {
    const callbacks = new Set<() => void>();
    const listener = (): void => {
      waiting.delete(signal);
      for (const cb of [...callbacks]) cb();
      callbacks.clear();
    };
    entry = { callbacks, listener };
    waiting.set(signal, entry);
    signal.addEventListener('abort', listener, { once: true });
  }
  const mine = entry;
  // A distinct wrapper per call, so the same function registered twice is removed once each.
  const cb = (): void => fn();
  mine.callbacks.add(cb);
  return () => {
    if (!mine.callbacks.delete(cb) || mine.callbacks.size > 0) return;
    signal.removeEventListener('abort', mine.listener);
    if (waiting.get(signal) === mine) waiting.delete(signal);
  };
}
