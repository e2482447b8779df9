/** GET /api/batches, GET /api/batches/{batchId}, its /report and /timeline. */
import type { HttpRequest, HttpResponseInit } from '@azure/functions';

import { type BatchPageQuery, isCursor, PAGE_LIMITS } from '../shared/batch/batch-pages';
import { reportCsv } from '../shared/billing/report';
import { ValidationError } from '../shared/errors';
import { statusBody } from './batch-status-body';
import { json } from './http-errors';
import { guardedRoute } from './http-route';
import { problem } from './problem';
import { reprDigest } from './repr-digest';
import { notModified, statusEtag } from './status-etag';

const notFound = (): HttpResponseInit => problem(404, 'not_found', 'no such batch');
/** A report is a client's billing data: never kept by a shared cache (a proxy, a CDN). */
const PRIVATE = 'private, no-store';

export const getBatch = guardedRoute('getBatch', {
  route: 'batches/{batchId}',
  method: 'GET',
  handle: async ({ app, req, caller }) => {
    const found = await app.status(req.params.batchId ?? '', caller);
    if (!found) return notFound();
    const status = statusBody(found);
    // Private: the answer depends on who asks. no-cache: revalidate every time (the CLI's wait does).
    const headers = { ETag: statusEtag(status), 'Cache-Control': 'private, no-cache' };
    return notModified(req, headers.ETag) ? { status: 304, headers } : json(200, status, headers);
  },
});

/** Where the batch's time went (the status page's batch view); the same access as getBatch. */
export const getBatchTimeline = guardedRoute('getBatchTimeline', {
  route: 'batches/{batchId}/timeline',
  method: 'GET',
  handle: async ({ app, req, caller }) => {
    const timeline = await app.timeline(req.params.batchId ?? '', caller);
    // Private: the answer depends on who asks, and no shared cache may keep a client's batch.
    return timeline ? json(200, timeline, { 'Cache-Control': 'private, no-store' }) : notFound();
  },
});

/** `?format=` is `json` (the default) or `csv`; anything else is refused before any Storage request. */
function reportFormat(req: HttpRequest): 'json' | 'csv' {
  const format = req.query.get('format') ?? 'json';
  if (format !== 'json' && format !== 'csv')
    throw new ValidationError('format must be json or csv', { code: 'invalid_request' });
  return format;
}

export const getBatchReport = guardedRoute('getBatchReport', {
  route: 'batches/{batchId}/report',
  method: 'GET',
  handle: async ({ app, req, caller }): Promise<HttpResponseInit> => {
    const format = reportFormat(req);
    const found = await app.report(req.params.batchId ?? '', caller);
    if (found.kind === 'not_found') return notFound();
    // The contract fixes `status` as the batch's state here, not the HTTP status RFC 9457 puts there
    // (a problem-details reader ignores a `status` that is not a number, RFC 9457 §3.1).
    if (found.kind === 'not_ready')
      return problem(409, 'not_ready', `the batch is ${found.status}: its report is not ready`, {
        status: found.status,
      });
    if (format === 'csv') {
      const csv = reportCsv(found.report);
      return {
        status: 200,
        body: csv,
        headers: {
          'Content-Type': 'text/csv; charset=utf-8',
          'Content-Disposition': `attachment; filename="${found.report.batchId}.csv"`,
          'Repr-Digest': reprDigest(Buffer.from(csv, 'utf8')),
          'Cache-Control': PRIVATE,
        },
      };
    }
    // The bytes as finalize wrote them, never re-serialized: the status's reportSha256 is their digest.
    return {
      status: 200,
      body: found.bytes,
      headers: { 'Content-Type': 'application/json', 'Repr-Digest': reprDigest(found.bytes), 'Cache-Control': PRIVATE },
    };
  },
});

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
export const listBatches = guardedRoute('listBatches', {
  route: 'batches',
  method: 'GET',
  handle: async ({ app, req, caller }) =>
    json(200, await app.batchPage(caller, pageQuery(req)), { 'Cache-Control': 'no-store' }),
});
