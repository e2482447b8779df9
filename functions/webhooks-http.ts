/**
 * POST /api/ops/webhooks/test: one signed test event (`com.pushdrain.webhook.test`) to every
 * PUSHDRAIN_WEBHOOK_URL, answered per target with its status, time and error. Admin only; it writes
 * nothing (a probe, not an outbox entry). 409 no_webhooks when no webhook is configured.
 */
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { describeSubmitter, submitterOf } from '../shared/auth/principal';
import { ValidationError } from '../shared/errors';
import { errorResponse, json } from './http-errors';
import { pushdrainApp } from './pushdrain-app';
import { authLevel, ROUTE_ROLES } from './route-access';

/** The route takes no options: an empty body or `{}`. */
function checkBody(text: string): void {
  const t = text.trim();
  if (t === '' || /^\{\s*\}$/.test(t)) return;
  throw new ValidationError('the body must be empty or {}: the test event takes no options', {
    code: 'invalid_request',
  });
}

export async function postWebhookTest(
  app: PushdrainApp,
  req: HttpRequest,
  context: InvocationContext,
): Promise<HttpResponseInit> {
  try {
    const caller = await app.authorize(req.headers.get('authorization'), ROUTE_ROLES.admin);
    checkBody(await req.text());
    const result = await app.sendTestEvent();
    context.log(
      `webhook test ${result.eventId} asked by ${describeSubmitter(submitterOf(caller))}: ${result.targets.length - result.failed} of ${result.targets.length} target(s) answered 2xx`,
    );
    return json(200, result, { 'Cache-Control': 'no-store' });
  } catch (e) {
    return errorResponse(e, context);
  }
}

app.http('opsWebhookTest', {
  route: 'ops/webhooks/test',
  methods: ['POST'],
  authLevel: authLevel('admin'),
  handler: (req, context) => postWebhookTest(pushdrainApp(), req, context),
});
