/**
 * Invokes the real function handlers the way the host would: HTTP requests built with
 * HttpRequest, and captured WorkDetected events fed to the drain/aggregate handler, as
 * the Service Bus trigger would feed them (concurrently, honouring scheduled delays).
 */
import { HttpRequest, type HttpResponseInit, InvocationContext } from '@azure/functions';

import { getBatch, getBatchReport } from '../../functions/batches-http';
import { postBatch } from '../../functions/ingest-http';
import { onWorkDetected } from '../../functions/work-detected';
import type { Runtime } from '../../shared/runtime';
import type { CapturingPublisher } from './capturing-publisher';

export const logs: string[] = [];

export function context(functionName = 'test'): InvocationContext {
  return new InvocationContext({
    functionName,
    logHandler: (level, ...args) => logs.push(`${level}: ${args.map(String).join(' ')}`),
  });
}

export async function post(rt: Runtime, body: Buffer | string, headers: Record<string, string> = {}): Promise<HttpResponseInit> {
  const req = new HttpRequest({
    method: 'POST',
    url: 'http://localhost:7071/api/batches',
    body: typeof body === 'string' ? { string: body } : { bytes: body },
    headers: { 'content-type': 'application/x-ndjson', ...headers },
  });
  return postBatch(rt, req, context('postBatch'));
}

export async function status(rt: Runtime, batchId: string): Promise<HttpResponseInit> {
  return getBatch(rt, new HttpRequest({ method: 'GET', url: `http://localhost/api/batches/${batchId}`, params: { batchId } }), context('getBatch'));
}

export async function report(rt: Runtime, batchId: string, query: Record<string, string> = {}): Promise<HttpResponseInit> {
  return getBatchReport(rt, new HttpRequest({ method: 'GET', url: `http://localhost/api/batches/${batchId}/report`, params: { batchId }, query }), context('getBatchReport'));
}

export interface PumpResult {
  invocations: number;
  byRole: { input: number; output: number };
}

/**
 * Feeds events to the handlers until `done()` holds or the time runs out. Events with a
 * delay (scheduled continuations) fire after it, like a scheduled Service Bus message.
 */
export async function pump(rt: Runtime, events: CapturingPublisher, done: () => Promise<boolean>, timeoutMs = 60_000): Promise<PumpResult> {
  const inflight = new Set<Promise<unknown>>();
  const timers = new Set<NodeJS.Timeout>();
  const result: PumpResult = { invocations: 0, byRole: { input: 0, output: 0 } };
  const deadline = Date.now() + timeoutMs;
  const fire = (body: unknown, role: 'input' | 'output'): void => {
    result.invocations++;
    result.byRole[role]++;
    const p = onWorkDetected(rt, body, context(role === 'input' ? 'drain' : 'aggregate')).catch(() => undefined);
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };
  try {
    while (Date.now() < deadline) {
      for (const c of events.take()) {
        // Through JSON, as the event travels on the wire.
        const body: unknown = JSON.parse(JSON.stringify(c.event));
        if (c.delayMs > 0) {
          const t = setTimeout(() => {
            timers.delete(t);
            fire(body, c.event.role);
          }, c.delayMs);
          timers.add(t);
        } else fire(body, c.event.role);
      }
      if (await done()) break;
      await Promise.race([new Promise((r) => setTimeout(r, 50)), ...inflight]);
    }
    if (!(await done())) throw new Error(`pump: not done after ${timeoutMs} ms (${result.invocations} invocations)`);
    await Promise.all(inflight);
    return result;
  } finally {
    for (const t of timers) clearTimeout(t);
  }
}

export async function completed(rt: Runtime, batchId: string): Promise<boolean> {
  const got = await rt.ctx.manifests.read(batchId);
  return got?.manifest.state === 'completed' || got?.manifest.state === 'failed';
}
