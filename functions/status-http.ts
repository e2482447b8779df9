/**
 * GET /api/ops/status (function key: read-only) and GET /api/dashboard (the page shell:
 * static, no data, no key inside, no Storage request; the data it shows needs the key).
 */
import type { HttpRequest, HttpResponseInit } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { json } from './http-errors';
import { guardedRoute, openRoute } from './http-route';
import { pushdrainApp } from './pushdrain-app';

export const getStatus = guardedRoute('opsStatus', {
  route: 'ops/status',
  method: 'GET',
  handle: async ({ app }) => json(200, await app.statusReport(), { 'Cache-Control': 'no-store' }),
});

export function getDashboard(app: PushdrainApp, req: HttpRequest): HttpResponseInit {
  const page = app.dashboardPage();
  if (req.headers.get('if-none-match') === page.headers.ETag) return { status: 304, headers: page.headers };
  return { status: 200, body: page.body, headers: page.headers };
}

openRoute('dashboard', { route: 'dashboard', method: 'GET', handler: (req) => getDashboard(pushdrainApp(), req) });
