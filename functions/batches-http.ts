/** GET /api/batches, GET /api/batches/{batchId}, its /report and /timeline, GET /api/health. */
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { type BatchPageQuery, isCursor, PAGE_LIMITS } from '../shared/batch/batch-pages';
import { reportCsv } from '../shared/billing/report';
import { ValidationError } from '../shared/errors';
import { errorResponse, json } from './http-errors';
import { pushdrainApp } from './pushdrain-app';
import { authLevel, ROUTE_ROLES } from './route-access';
import { notModified, statusEtag } from './status-etag';

const NOT_FOUND = { error: 'not_found', message: 'no such batch' };

export async function getBatch(
  app: PushdrainApp,
  req: HttpRequest,
  context: InvocationContext,
): Promise<HttpResponseInit> {
  try {
    const caller = await app.authorize(req.headers.get('authorization'), ROUTE_ROLES.readBatch);
    const status = await app.status(req.params.batchId ?? '', caller);
    if (!status) return json(404, NOT_FOUND);
    // Private: the answer depends on who asks. no-cache: revalidate every time (the CLI's wait does).
    const headers = { ETag: statusEtag(status), 'Cache-Control': 'private, no-cache' };
    return notModified(req, headers.ETag) ? { status: 304, headers } : json(200, status, headers);
  } catch (e) {
    return errorResponse(e, context);
  }
}

/** Where the batch's time went (the status page's batch view); the same access as getBatch. */
export async function getBatchTimeline(
  app: PushdrainApp,
  req: HttpRequest,
  context: InvocationContext,
): Promise<HttpResponseInit> {
  try {
    const caller = await app.authorize(req.headers.get('authorization'), ROUTE_ROLES.readBatch);
    const timeline = await app.timeline(req.params.batchId ?? '', caller);
    return timeline ? json(200, timeline) : json(404, NOT_FOUND);
  } catch (e) {
    return errorResponse(e, context);
  }
}

/** `?format=` is `json` (the default) or `csv`; anything else is refused before any Storage request. */
function reportFormat(req: HttpRequest): 'json' | 'csv' {
  const format = req.query.get('format') ?? 'json';
  if (format !== 'json' && format !== 'csv')
    throw new ValidationError('format must be json or csv', { code: 'invalid_request' });
  return format;
}

export async function getBatchReport(
  app: PushdrainApp,
  req: HttpRequest,
  context: InvocationContext,
): Promise<HttpResponseInit> {
  try {
    const caller = await app.authorize(req.headers.get('authorization'), ROUTE_ROLES.readBatch);
    const format = reportFormat(req);
    const found = await app.report(req.params.batchId ?? '', caller);
    if (found.kind === 'not_found') return json(404, NOT_FOUND);
    if (found.kind === 'not_ready') return json(409, { error: 'not_ready', status: found.status });
    if (format === 'csv') {
      return {
        status: 200,
        body: reportCsv(found.report),
        headers: {
          'Content-Type': 'text/csv; charset=utf-8',
          'Content-Disposition': `attachment; filename="${found.report.batchId}.csv"`,
        },
      };
    }
    return json(200, found.report);
  } catch (e) {
    return errorResponse(e, context);
  }
}

/** `?limit=` (1–100) and `?cursor=` (a page's `next`), checked before any Storage request. */
function pageQuery(req: HttpRequest): BatchPageQuery {
  const raw = req.query.get('limit');
  const limit = raw === null ? PAGE_LIMITS.default : Number(raw);
  const cursor = req.query.get('cursor') ?? undefined;
  const bad = (field: string, message: string): ValidationError =>
    new ValidationError(`${field} ${message}`, { code: 'invalid_request' });
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMITS.max)
    throw bad('limit', `must be a whole number from 1 to ${PAGE_LIMITS.max}`);
  if (cursor !== undefined && !isCursor(cursor)) throw bad('cursor', "must be the previous page's next");
  return { limit, ...(cursor !== undefined ? { cursor } : {}) };
}

/**
 * GET /api/batches: the newest batches the caller may see. A submitter gets its own only (from
 * its owner index), a reader or a function-key holder every batch.
 */
export async function listBatches(
  app: PushdrainApp,
  req: HttpRequest,
  context: InvocationContext,
): Promise<HttpResponseInit> {
  try {
    const caller = await app.authorize(req.headers.get('authorization'), ROUTE_ROLES.listBatches);
    const query = pageQuery(req);
    return json(200, await app.batchPage(caller, query), { 'Cache-Control': 'no-store' });
  } catch (e) {
    return errorResponse(e, context);
  }
}

/**
 * Makes no Storage request: a health probe must not cost transactions or wake anything. Always
 * 200, so probes never recycle a healthy worker over a namespace or scaling problem: `status` is
 * degraded while a Service Bus entity is failed over, the scaling agent is disabled (a 403) or a
 * dead letter was counted, and red after a permanent Service Bus failure (fix the configuration).
 * Dead letters are counts from memory, recounted in the background at most every few minutes.
 * The route is anonymous: states and counts only, no error text (it can name hosts or
 * identities) and no message; the errors are in the log, the dead letters in the status report.
 */
export function health(app: PushdrainApp): HttpResponseInit {
  const {
    serviceBus,
    scaleAgent: { message: _, ...scaleAgent },
    ...rest
  } = app.healthProbe();
  const failover = serviceBus && {
    status: serviceBus.status,
    entities: Object.fromEntries(
      Object.entries(serviceBus.entities).map(([name, { lastError: _e, ...state }]) => [name, state]),
    ),
    backlogOutOfRotation: serviceBus.backlogOutOfRotation.map(({ lastError: _e, ...queue }) => queue),
  };
  return json(200, {
    ...rest,
    scaleAgent,
    storageTransactions: app.storageTransactions(),
    ...(failover ? { serviceBus: failover } : {}),
  });
}

app.http('listBatches', {
  route: 'batches',
  methods: ['GET'],
  authLevel: authLevel('function'),
  handler: (req, context) => listBatches(pushdrainApp(), req, context),
});

app.http('getBatch', {
  route: 'batches/{batchId}',
  methods: ['GET'],
  authLevel: authLevel('function'),
  handler: (req, context) => getBatch(pushdrainApp(), req, context),
});

app.http('getBatchReport', {
  route: 'batches/{batchId}/report',
  methods: ['GET'],
  authLevel: authLevel('function'),
  handler: (req, context) => getBatchReport(pushdrainApp(), req, context),
});

app.http('getBatchTimeline', {
  route: 'batches/{batchId}/timeline',
  methods: ['GET'],
  authLevel: authLevel('function'),
  handler: (req, context) => getBatchTimeline(pushdrainApp(), req, context),
});

app.http('health', {
  route: 'health',
  methods: ['GET'],
  authLevel: 'anonymous',
  handler: () => health(pushdrainApp()),
});
