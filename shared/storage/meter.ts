/**
 * Storage-transaction meter: a pipeline policy on every Storage client that counts each
 * request attempt (retries are billed too) by operation. Storage transactions are a
 * first-class metric: they are most of the bill of a queue-based design.
 */
import type { PipelinePolicy, PipelineRequest } from '@azure/core-rest-pipeline';

export type StorageService = 'blob' | 'queue';

export type MeterSnapshot = Record<string, number>;

export type MeterListener = (operation: string, n: number) => void;

export class StorageMeter {
  private readonly counts = new Map<string, number>();
  private readonly listeners = new Set<MeterListener>();
  /** Requests counted and not yet answered. */
  private pending = 0;

  /** Called on every count (the status history buckets requests by time); returns the unsubscribe. */
  onCount(listener: MeterListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A policy for one client; place it per retry so every attempt counts. */
  policyFor(service: StorageService): PipelinePolicy {
    return {
      name: `pushdrainMeter-${service}`,
      sendRequest: async (request, next) => {
        this.add(classify(service, request));
        this.pending++;
        try {
          return await next(request);
        } finally {
          this.pending--;
        }
      },
    };
  }

  add(operation: string, n = 1): void {
    this.counts.set(operation, (this.counts.get(operation) ?? 0) + n);
    for (const l of this.listeners) l(operation, n);
  }

  /** Counts by operation, sorted by name, plus `total`. */
  snapshot(): MeterSnapshot {
    const out: MeterSnapshot = {};
    let total = 0;
    for (const [k, v] of [...this.counts.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      out[k] = v;
      total += v;
    }
    out.total = total;
    return out;
  }

  /**
   * Requests counted whose answer has not come back. At 0, every counted request has reached the
   * wire, so a count taken at the wire at that moment must equal this one.
   */
  inFlight(): number {
    return this.pending;
  }

  total(): number {
    let t = 0;
    for (const v of this.counts.values()) t += v;
    return t;
  }

  reset(): void {
    this.counts.clear();
  }
}

/** The difference of two snapshots (what happened in between). */
export function meterDelta(after: MeterSnapshot, before: MeterSnapshot): MeterSnapshot {
  const out: MeterSnapshot = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

/** Names an operation from the REST shape of the request (method, path, comp/restype). */
export function classify(
  service: StorageService,
  request: Pick<PipelineRequest, 'method' | 'url' | 'headers'>,
): string {
  const url = new URL(request.url);
  const q = url.searchParams;
  const comp = q.get('comp');
  const method = request.method.toUpperCase();
  if (service === 'queue') {
    if (comp === 'list') return 'queue.list';
    if (comp === 'metadata') return method === 'GET' || method === 'HEAD' ? 'queue.metadata' : 'queue.setMetadata';
    if (/\/messages\/[^/]+$/.test(url.pathname)) return method === 'DELETE' ? 'queue.delete' : 'queue.update';
    if (url.pathname.endsWith('/messages')) {
      if (method === 'POST') return 'queue.put';
      if (method === 'DELETE') return 'queue.clear';
      return q.get('peekonly') === 'true' ? 'queue.peek' : 'queue.get';
    }
    if (method === 'PUT') return 'queue.create';
    if (method === 'DELETE') return 'queue.deleteQueue';
    return `queue.other`;
  }
  const restype = q.get('restype');
  if (comp === 'lease') return 'blob.lease';
  if (restype === 'container') {
    if (comp === 'list') return 'blob.list';
    if (method === 'PUT') return 'container.create';
    if (method === 'DELETE') return 'container.delete';
    return 'container.properties';
  }
  if (comp === 'list') return 'blob.list';
  if (comp === 'metadata') return 'blob.metadata';
  if (comp === 'block') return 'blob.putBlock';
  if (comp === 'blocklist') return 'blob.putBlockList';
  if (method === 'PUT') return request.headers.get('x-ms-copy-source') ? 'blob.copy' : 'blob.put';
  if (method === 'GET') return 'blob.get';
  if (method === 'HEAD') return 'blob.properties';
  if (method === 'DELETE') return 'blob.delete';
  return 'blob.other';
}
