/**
 * Every data and operator route called through its real handler, as the Functions host would call
 * it once the platform's key check has passed: the same table for each test that asks who may call
 * what (test/http/entra-access.test.ts, test/http/auth-modes.test.ts).
 */
import { HttpRequest, type HttpResponseInit } from '@azure/functions';

import { getBatch, getBatchReport, listBatches } from '../../functions/batches-http';
import { postBatch } from '../../functions/ingest-http';
import { postRedrive } from '../../functions/redrive-http';
import { getStatus } from '../../functions/status-http';
import type { PushdrainApp } from '../../shared/app';
import { context, reportRead } from './invoke';

export type Headers = Record<string, string>;

/** One valid transaction as an NDJSON line. */
export const line = (id: string, account = 'a1'): string =>
  JSON.stringify({ id, account, timestamp: '2026-03-01T10:00:00Z', type: 'charge', amount: 100, currency: 'EUR' });

/** POST /api/batches with an NDJSON body (one transaction by default) and an optional Idempotency-Key. */
export function post(app: PushdrainApp, headers: Headers, body = line('t1'), key?: string): Promise<HttpResponseInit> {
  return postBatch(
    app,
    new HttpRequest({
      method: 'POST',
      url: 'http://localhost/api/batches',
      body: { string: body },
      headers: { 'content-type': 'application/x-ndjson', ...(key ? { 'idempotency-key': key } : {}), ...headers },
    }),
    context('postBatch'),
  );
}

const get = (path: string, headers: Headers, params: Record<string, string> = {}): HttpRequest =>
  new HttpRequest({ method: 'GET', url: `http://localhost/api/${path}`, headers, params });

/** GET /api/batches with a query (`limit`, `cursor`). */
export const list = (app: PushdrainApp, h: Headers, query: Record<string, string> = {}): Promise<HttpResponseInit> =>
  listBatches(
    app,
    new HttpRequest({
      method: 'GET',
      url: `http://localhost/api/batches?${new URLSearchParams(query).toString()}`,
      headers: h,
      query,
    }),
    context('listBatches'),
  );

/** Each route by its function's name; `id` names the batch where the route has one. */
export const routes = {
  postBatch: (app: PushdrainApp, h: Headers) => post(app, h),
  listBatches: (app: PushdrainApp, h: Headers) => list(app, h),
  getBatch: (app: PushdrainApp, h: Headers, id: string) =>
    getBatch(app, get(`batches/${id}`, h, { batchId: id }), context('getBatch')),
  getBatchReport: (app: PushdrainApp, h: Headers, id: string) =>
    getBatchReport(app, get(`batches/${id}/report`, h, { batchId: id }), context('getBatchReport')).then(reportRead),
  opsStatus: (app: PushdrainApp, h: Headers) => getStatus(app, get('ops/status', h), context('opsStatus')),
  opsRedrive: (app: PushdrainApp, h: Headers) =>
    postRedrive(
      app,
      new HttpRequest({ method: 'POST', url: 'http://localhost/api/ops/redrive', headers: h }),
      context('opsRedrive'),
    ),
} as const;

export type RouteName = keyof typeof routes;
