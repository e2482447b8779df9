/**
 * POST /api/ops/webhooks/test: one signed test event (`com.pushdrain.webhook.test`) to every
 * PUSHDRAIN_WEBHOOK_URL, answered per target with its status, time and error. Admin only; it writes
 * nothing (a probe, not an outbox entry). 409 no_webhooks when no webhook is configured.
 */
import { describeSubmitter, submitterOf } from '../shared/auth/principal';
import { ValidationError } from '../shared/errors';
import { json } from './http-errors';
import { guardedRoute } from './http-route';

/** The route takes no options: an empty body or `{}`. */
function checkBody(text: string): void {
  const t = text.trim();
  if (t === '' || /^\{\s*\}$/.test(t)) return;
  throw new ValidationError('the body must be empty or {}: the test event takes no options', {
    code: 'invalid_request',
  });
}

export const postWebhookTest = guardedRoute('opsWebhookTest', {
  route: 'ops/webhooks/test',
  method: 'POST',
  keyLevel: 'admin',
  handle: async ({ app, req, context, caller }) => {
    checkBody(await req.text());
    const result = await app.sendTestEvent();
    context.log(
      `webhook test ${result.eventId} asked by ${describeSubmitter(submitterOf(caller))}: ${result.targets.length - result.failed} of ${result.targets.length} target(s) answered 2xx`,
    );
    return json(200, result, { 'Cache-Control': 'no-store' });
  },
});
