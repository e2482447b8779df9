/**
 * Invokes the real function handlers the way the host would: HTTP requests built with
 * HttpRequest, and captured WorkDetected events fed to the drain/aggregate handler, as
 * the Service Bus trigger would feed them (concurrently, honouring scheduled delays).
 */
import { HttpRequest, type HttpResponseInit, InvocationContext } from '@azure/functions';

import { getBatch, getBatchReport } from '../../functions/batches-http';
import { onWorkDetected } from '../../functions/drain';
import { postBatch } from '../../functions/ingest-http';
import type { PushdrainApp } from '../../shared/app';
import type { Captured, CapturingPublisher } from './capturing-publisher';

export const logs: string[] = [];

export function context(functionName = 'test'): InvocationContext {
  return new InvocationContext({
    functionName,
    logHandler: (level, ...args) => logs.push(`${level}: ${args.map(String).join(' ')}`),
  });
}

export async function post(
  app: PushdrainApp,
  body: Buffer | string,
  headers: Record<string, string> = {},
): Promise<HttpResponseInit> {
  const req = new HttpRequest({
    method: 'POST',
    url: 'http://localhost:7071/api/batches',
    body: typeof body === 'string' ? { string: body } : { bytes: body },
    headers: { 'content-type': 'application/x-ndjson', ...headers },
  });
  return postBatch(app, req, context('postBatch'));
}

export async function status(
  app: PushdrainApp,
  batchId: string,
  headers: Record<string, string> = {},
): Promise<HttpResponseInit> {
  return getBatch(
    app,
    new HttpRequest({ method: 'GET', url: `http://localhost/api/batches/${batchId}`, params: { batchId }, headers }),
    context('getBatch'),
  );
}

/** GET …/report through the real handler (the JSON report parsed as by reportRead). */
export async function report(
  app: PushdrainApp,
  batchId: string,
  query: Record<string, string> = {},
): Promise<HttpResponseInit> {
  const res = await getBatchReport(
    app,
    new HttpRequest({
      method: 'GET',
      url: `http://localhost/api/batches/${batchId}/report`,
      params: { batchId },
      query,
    }),
    context('getBatchReport'),
  );
  return reportRead(res);
}

/**
 * The JSON report is sent as the bytes finalize wrote (its digest is theirs); the answer also gets
 * them parsed into jsonBody, as a client reads them.
 */
export function reportRead(res: HttpResponseInit): HttpResponseInit {
  const type = (res.headers as Record<string, string> | undefined)?.['Content-Type'];
  if (res.jsonBody === undefined && Buffer.isBuffer(res.body) && type === 'application/json')
    return { ...res, jsonBody: JSON.parse(res.body.toString('utf8')) as unknown };
  return res;
}

export interface PumpResult {
  invocations: number;
  byRole: { input: number; output: number };
}

/**
 * Feeds events to the handlers until `done()` holds or the time runs out. Events with a
 * delay (scheduled continuations) fire after it, like a scheduled Service Bus message.
 */
export async function pump(
  app: PushdrainApp,
  events: CapturingPublisher,
  done: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<PumpResult> {
  const inflight = new Set<Promise<unknown>>();
  // Scheduled events not yet fired: handed back to the publisher when this pump returns, so a
  // later pump still delivers them (as Service Bus would: a scheduled message is not lost).
  const timers = new Map<NodeJS.Timeout, { event: Captured['event']; fireAt: number }>();
  const result: PumpResult = { invocations: 0, byRole: { input: 0, output: 0 } };
  const deliveries = new Map<unknown, number>();
  const deadline = Date.now() + timeoutMs;
  const fire = (body: unknown, role: 'input' | 'output'): void => {
    result.invocations++;
    result.byRole[role]++;
    // A failed invocation is abandoned and redelivered, as Service Bus does (up to 10 deliveries).
    const p = onWorkDetected(app, body, context(role === 'input' ? 'drain' : 'aggregate')).catch(() => {
      const n = (deliveries.get(body) ?? 1) + 1;
      if (n > 10) return;
      deliveries.set(body, n);
      const t = setTimeout(() => {
        timers.delete(t);
        fire(body, role);
      }, 250);
      timers.set(t, { event: body as Captured['event'], fireAt: Date.now() + 250 });
    });
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
          timers.set(t, { event: c.event, fireAt: Date.now() + c.delayMs });
        } else fire(body, c.event.role);
      }
      if (await done()) break;
      await Promise.race([new Promise((r) => setTimeout(r, 50)), ...inflight]);
    }
    if (!(await done())) throw new Error(`pump: not done after ${timeoutMs} ms (${result.invocations} invocations)`);
    await Promise.all(inflight);
    return result;
  } finally {
    for (const [t, pending] of timers) {
      clearTimeout(t);
      void events.publish([pending.event], Math.max(1, pending.fireAt - Date.now()));
    }
  }
}

export async function completed(app: PushdrainApp, batchId: string): Promise<boolean> {
  const got = await app.status(batchId);
  return got?.status === 'completed' || got?.status === 'failed';
}
