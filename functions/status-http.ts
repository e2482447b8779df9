/**
 * GET /api/ops/status (function key: read-only) and GET /api/dashboard (the page shell:
 * static, no data, no key inside, no Storage request; the data it shows needs the key).
 */
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { errorResponse, json } from './http-errors';
import { pushdrainApp } from './pushdrain-app';
import { authLevel, ROUTE_ROLES } from './route-access';

export async function getStatus(
  app: PushdrainApp,
  req: HttpRequest,
  context: InvocationContext,
): Promise<HttpResponseInit> {
  try {
    await app.authorize(req.headers.get('authorization'), ROUTE_ROLES.status);
    return json(200, await app.statusReport(), { 'Cache-Control': 'no-store' });
  } catch (e) {
    return errorResponse(e, context);
  }
}

export function getDashboard(app: PushdrainApp, req: HttpRequest): HttpResponseInit {
  const page = app.dashboardPage();
  if (req.headers.get('if-none-match') === page.headers.ETag) return { status: 304, headers: page.headers };
  return { status: 200, body: page.body, headers: page.headers };
}

app.http('opsStatus', {
  route: 'ops/status',
  methods: ['GET'],
  authLevel: authLevel('function'),
  handler: (req, context) => getStatus(pushdrainApp(), req, context),
});

app.http('dashboard', {
  route: 'dashboard',
  methods: ['GET'],
  authLevel: 'anonymous',
  handler: (req) => getDashboard(pushdrainApp(), req),
});
