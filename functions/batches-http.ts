/** GET /api/batches/{batchId}, GET /api/batches/{batchId}/report, GET /api/health. */
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { reportCsv } from '../shared/billing/report';
import { errorResponse, json } from './http-errors';
import { instance } from './instance';

const NOT_FOUND = { error: 'not_found', message: 'no such batch' };

export async function getBatch(rt: PushdrainApp, req: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  try {
    const status = await rt.status(req.params.batchId ?? '');
    return status ? json(200, status) : json(404, NOT_FOUND);
  } catch (e) {
    return errorResponse(e, context);
  }
}

export async function getBatchReport(rt: PushdrainApp, req: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  try {
    const found = await rt.report(req.params.batchId ?? '');
    if (found.kind === 'not_found') return json(404, NOT_FOUND);
    if (found.kind === 'not_ready') return json(409, { error: 'not_ready', status: found.status });
    if (req.query.get('format') === 'csv') {
      return {
        status: 200,
        body: reportCsv(found.report),
        headers: { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="${found.report.batchId}.csv"` },
      };
    }
    return json(200, found.report);
  } catch (e) {
    return errorResponse(e, context);
  }
}

/**
 * Makes no Storage request: a health probe must not cost transactions or wake anything. With a
 * secondary namespace, `status` is degraded while an entity is failed over and red after a
 * permanent failure (fix the configuration); the answer stays 200 so probes never recycle a
 * healthy worker over a namespace problem. The route is anonymous: states only, no error text
 * (it can name hosts); the errors are in the log.
 */
export function health(rt: PushdrainApp): HttpResponseInit {
  const { status, serviceBus } = rt.health();
  const failover = serviceBus && {
    entities: Object.fromEntries(Object.entries(serviceBus.entities).map(([name, { lastError: _, ...state }]) => [name, state])),
    backlogOutOfRotation: serviceBus.backlogOutOfRotation.map(({ lastError: _, ...queue }) => queue),
  };
  return json(200, { status, storageTransactions: rt.storageTransactions(), ...(failover ? { serviceBus: failover } : {}) });
}

app.http('getBatch', {
  route: 'batches/{batchId}',
  methods: ['GET'],
  authLevel: 'function',
  handler: (req, context) => getBatch(instance(), req, context),
});

app.http('getBatchReport', {
  route: 'batches/{batchId}/report',
  methods: ['GET'],
  authLevel: 'function',
  handler: (req, context) => getBatchReport(instance(), req, context),
});

app.http('health', {
  route: 'health',
  methods: ['GET'],
  authLevel: 'anonymous',
  handler: () => health(instance()),
});
