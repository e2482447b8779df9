/**
 * A webhook delivery's retry is a message of its own on the watchdog queue, handled by its own
 * path (app.retryDelivery), on Azurite with a real receiver; a retry in the older shape (a
 * watchdog check carrying `delivery`), still in flight across an upgrade, is attempted as well.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';

import { onWatchdog } from '../../functions/watchdog';
import type { DeliveryRetryMessage } from '../../shared/bus/delivery-retry';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { completed, context, post, pump } from '../support/invoke';
import { testRuntime, useStorage } from '../support/storage';
import { startWebhookReceiver } from '../support/webhook-receiver';

useStorage();

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

describe('delivery retries on the watchdog queue', () => {
  test('a failed delivery schedules a DeliveryRetry; one in the older shape is still attempted', async () => {
    const hook = await startWebhookReceiver(SECRET);
    try {
      hook.script([503], 200);
      const { app, parts, events, observer } = await testRuntime({
        PUSHDRAIN_CHUNK_SIZE: '10',
        PUSHDRAIN_WEBHOOK_URL: hook.url,
        PUSHDRAIN_WEBHOOK_SECRET: SECRET,
        PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: '1,1',
      });
      const res = await post(app, toNdjson(generate(20, 41, 3)));
      assert.equal(res.status, 202);
      const { batchId } = res.jsonBody as { batchId: string };
      await pump(app, events, () => completed(observer, batchId));
      await parts.events.idle();
      assert.equal(hook.attempts.length, 1, 'the first attempt was answered 503');
      const scheduled = events.checks.map((c) => c.check).filter((c) => c.batchId === batchId && 'kind' in c);
      assert.equal(scheduled.length, 1);
      const retry = scheduled[0] as DeliveryRetryMessage;
      assert.equal(retry.kind, 'DeliveryRetry');
      assert.equal(retry.attempts, 1);
      assert.equal('attempt' in retry || 'settledBefore' in retry, false, 'none of the watchdog check fields');

      // The same retry as a process before this change scheduled it.
      const old = {
        v: 1,
        batchId,
        attempt: retry.attempts,
        settledBefore: 0,
        delivery: { eventId: retry.eventId, index: retry.index, attempts: retry.attempts },
      };
      const outcome = await onWatchdog(app, Buffer.from(JSON.stringify(old)), context('watchdog'));
      assert.equal(outcome?.kind, 'delivered');
      assert.equal(hook.requests.length, 1, 'delivered once, verified');
      // The new-shape copy of the same retry now finds the delivery done: stale, no second request.
      assert.deepEqual(await onWatchdog(app, JSON.parse(JSON.stringify(retry)), context('watchdog')), {
        kind: 'stale',
      });
      assert.equal(hook.attempts.length, 2);
    } finally {
      await hook.close();
    }
  });
});
