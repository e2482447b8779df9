/**
 * The pure rules behind batch events, checked exactly: an attempt's outcome against the retry
 * schedule, the SSRF guard's address ranges, the event settings (and that the secret never
 * prints), a delivery retry on the watchdog queue's wire, and the CloudEvent's shape.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inspect } from 'node:util';

import type { Manifest } from '../../../shared/batch/manifest';
import { batchEventOutgoing } from '../../../shared/bus/batch-event';
import { deliveryRetryMessage, deliveryRetryOutgoing } from '../../../shared/bus/delivery-retry';
import { DIAGNOSTIC_ID } from '../../../shared/bus/outgoing-message';
import { watchdogCheckOutgoing } from '../../../shared/bus/watchdog-check';
import { parseWatchdogQueueMessage } from '../../../shared/bus/watchdog-queue-message';
import { eventSettings } from '../../../shared/config/event-settings';
import { ConfigError } from '../../../shared/errors';
import { isBlockedAddress, resolveChecked } from '../../../shared/events/address-guard';
import { batchEventBody } from '../../../shared/events/batch-event';
import { applyAttempt, type Delivery, hasPendingDeliveries } from '../../../shared/events/outbox';

/** Signs callbacks (no key is derived: one must be set with PUSHDRAIN_CALLBACK_ORIGINS). */
const CALLBACK_KEY = `whsk_${'C'.repeat(43)}=`;

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const fresh = (): Delivery => ({
  kind: 'webhook',
  target: 'https://x.example/h',
  state: 'pending',
  attempts: 0,
  dueAt: '2026-01-01T00:00:00.000Z',
});

describe('an attempt against the schedule', () => {
  const schedule = [5, 300];
  const now = Date.parse('2026-01-01T00:00:00.000Z');

  test('2xx delivers, 410 stops that endpoint, anything else waits its step, then poison', () => {
    const ok = fresh();
    assert.deepEqual(applyAttempt(ok, { status: 204 }, schedule, now), { kind: 'finished' });
    assert.equal(ok.state, 'delivered');
    const gone = fresh();
    assert.deepEqual(applyAttempt(gone, { status: 410 }, schedule, now), { kind: 'finished' });
    assert.equal(gone.state, 'gone');
    const d = fresh();
    assert.deepEqual(applyAttempt(d, { status: 503 }, schedule, now), { kind: 'retry', delayMs: 5000 });
    assert.equal(d.dueAt, '2026-01-01T00:00:05.000Z');
    assert.deepEqual(applyAttempt(d, { error: 'no answer within 10000 ms' }, schedule, now), {
      kind: 'retry',
      delayMs: 300_000,
    });
    assert.equal(d.lastStatus, undefined, 'a timeout has no status');
    assert.deepEqual(applyAttempt(d, { status: 302 }, schedule, now), { kind: 'poisoned' });
    assert.equal(d.state, 'poisoned');
    assert.equal(d.attempts, 3);
    assert.equal(d.lastStatus, 302, 'a redirect is not followed: it is a failed attempt');
  });

  test('a manifest with a pending delivery keeps it open; delivered, gone and poisoned do not', () => {
    const e = (state: Delivery['state']) => ({ id: 'e', type: 't', body: '{}', deliveries: [{ ...fresh(), state }] });
    assert.equal(hasPendingDeliveries({ events: [e('pending')] }), true);
    assert.equal(hasPendingDeliveries({ events: [e('delivered'), e('gone'), e('poisoned')] }), false);
    assert.equal(hasPendingDeliveries({}), false);
  });
});

describe('the SSRF guard', () => {
  test('refuses loopback, private, link-local (the metadata endpoint), CGNAT, multicast and mapped forms', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:169.254.169.254',
      'not-an-ip',
    ])
      assert.equal(isBlockedAddress(a), true, a);
    for (const a of ['93.184.215.14', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8'])
      assert.equal(isBlockedAddress(a), false, a);
  });

  test('resolves names before deciding: localhost is refused unless allowed', async () => {
    await assert.rejects(
      resolveChecked('localhost', false),
      /resolves to .* a private, loopback or link-local address/,
    );
    assert.match((await resolveChecked('localhost', true)).address, /^(127\.0\.0\.1|::1)$/);
    await assert.rejects(resolveChecked('[::1]', false), /::1/);
  });
});

describe('event settings', () => {
  test('defaults: no webhook, the Standard Webhooks schedule, no callback origin', () => {
    const s = eventSettings({});
    assert.deepEqual(s.webhookUrls, []);
    assert.equal(s.secret, undefined);
    assert.deepEqual(s.retryScheduleSeconds, [5, 300, 1800, 7200, 18000, 36000, 36000]);
    assert.deepEqual(s.callbackOrigins, []);
  });

  test('https URLs, or http on loopback only; a bad one is named by position, never echoed', () => {
    const s = eventSettings({
      PUSHDRAIN_WEBHOOK_URL: 'https://a.example/h?token=t1, http://127.0.0.1:9/x',
      PUSHDRAIN_WEBHOOK_SECRET: SECRET,
    });
    assert.deepEqual(s.webhookUrls, ['https://a.example/h?token=t1', 'http://127.0.0.1:9/x']);
    assert.throws(
      () =>
        eventSettings({ PUSHDRAIN_WEBHOOK_URL: 'http://hooks.example/h?token=abc', PUSHDRAIN_WEBHOOK_SECRET: SECRET }),
      (e: unknown) =>
        e instanceof ConfigError && /entry 1 is not an https URL/.test(e.message) && !e.message.includes('abc'),
    );
  });

  test('a webhook or a callback origin needs the secret; a malformed secret is refused without echoing it', () => {
    assert.throws(() => eventSettings({ PUSHDRAIN_WEBHOOK_URL: 'https://a.example/h' }), /PUSHDRAIN_WEBHOOK_SECRET/);
    assert.throws(
      () => eventSettings({ PUSHDRAIN_CALLBACK_ORIGINS: 'https://b.example' }),
      /PUSHDRAIN_WEBHOOK_SECRET: is required/,
    );
    assert.throws(
      () => eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: 'hunter2-not-whsec' }),
      (e: unknown) => e instanceof ConfigError && !e.message.includes('hunter2'),
    );
  });

  test('the secret prints as [redacted] in JSON, inspect and strings', () => {
    const s = eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: SECRET });
    assert.equal(s.secret?.reveal(), SECRET);
    for (const text of [JSON.stringify(s), inspect(s, { depth: 5 }), String(s.secret), `${JSON.stringify({ s })}`])
      assert.equal(text.includes(SECRET.slice(6)), false, text);
  });

  test('callback origins are bare origins; the schedule is bounded whole seconds', () => {
    assert.deepEqual(
      eventSettings({
        PUSHDRAIN_CALLBACK_ORIGINS: 'https://b.example, http://127.0.0.1:8080',
        PUSHDRAIN_CALLBACK_SIGNING_KEY: CALLBACK_KEY,
        PUSHDRAIN_WEBHOOK_SECRET: SECRET,
      }).callbackOrigins,
      ['https://b.example', 'http://127.0.0.1:8080'],
    );
    assert.throws(
      () => eventSettings({ PUSHDRAIN_CALLBACK_ORIGINS: 'https://b.example/path', PUSHDRAIN_WEBHOOK_SECRET: SECRET }),
      /PUSHDRAIN_CALLBACK_ORIGINS: entry 1 is not an origin/,
    );
    assert.deepEqual(eventSettings({ PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: '1, 2,3' }).retryScheduleSeconds, [1, 2, 3]);
    assert.throws(
      () => eventSettings({ PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: '5,5m' }),
      /PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE/,
    );
  });
});

describe('a delivery retry on the watchdog queue', () => {
  test('a message of its own: round-trips through the parser, with a message id of its own', () => {
    const retry = deliveryRetryMessage('b-1', { eventId: 'evt_x', index: 1, attempts: 2, key: 'k1' });
    assert.deepEqual(retry, {
      v: 1,
      kind: 'DeliveryRetry',
      batchId: 'b-1',
      eventId: 'evt_x',
      index: 1,
      attempts: 2,
      key: 'k1',
    });
    assert.deepEqual(parseWatchdogQueueMessage(JSON.stringify(retry)), { kind: 'delivery-retry', retry });
    assert.equal(deliveryRetryOutgoing(retry).messageId, 'b-1:evt_x:1:2');
    assert.equal(deliveryRetryOutgoing(retry).subject, 'DeliveryRetry');
    const check = { v: 1 as const, batchId: 'b-1', attempt: 2, settledBefore: 0 };
    assert.deepEqual(parseWatchdogQueueMessage(check), { kind: 'check', check });
    assert.equal(watchdogCheckOutgoing(check).messageId, 'b-1:2');
    assert.equal(watchdogCheckOutgoing(check).subject, 'WatchdogCheck');
    assert.equal(
      parseWatchdogQueueMessage({ ...retry, index: undefined }),
      'a delivery retry must have an eventId, an index and attempts',
    );
  });

  test('one in flight in the older shape (a watchdog check with `delivery`) is read as the retry it is', () => {
    const old = {
      v: 1,
      batchId: 'b-1',
      attempt: 2,
      settledBefore: 0,
      delivery: { eventId: 'evt_x', index: 1, attempts: 2 },
    };
    assert.deepEqual(parseWatchdogQueueMessage(Buffer.from(JSON.stringify(old))), {
      kind: 'delivery-retry',
      retry: { v: 1, kind: 'DeliveryRetry', batchId: 'b-1', eventId: 'evt_x', index: 1, attempts: 2 },
    });
    assert.equal(
      parseWatchdogQueueMessage({ ...old, delivery: { eventId: 'e' } }),
      'a delivery retry must have an eventId, an index and attempts',
    );
  });
});

describe('the CloudEvent', () => {
  test('structured JSON with the batch as subject, completedAt as time, and the summary without rows', () => {
    const m = {
      batchId: 'b-9',
      state: 'completed',
      transactions: 3,
      chunks: 1,
      done: [0],
      failed: [],
      submittedAt: '2026-01-01T00:00:00.000Z',
      completedAt: '2026-01-01T00:00:01.500Z',
    } as unknown as Manifest;
    const totals = [{ currency: 'EUR', transactions: 3, charges: 300, refunds: 0, net: 300, tax: 60, total: 360 }];
    const { type, body } = batchEventBody(m, { batchId: 'b-9', transactions: 3, rows: [], totals }, { id: 'evt_1' });
    const e = JSON.parse(body) as Record<string, unknown>;
    assert.equal(type, 'com.pushdrain.batch.completed');
    assert.equal(e.specversion, '1.0');
    assert.equal(e.id, 'evt_1');
    assert.equal(e.subject, 'b-9');
    assert.equal(e.time, '2026-01-01T00:00:01.500Z');
    assert.equal(e.datacontenttype, 'application/json');
    assert.deepEqual((e.data as { summary: unknown }).summary, { transactions: 3, totals });
    assert.equal((e.data as { reportPath: string }).reportPath, '/api/batches/b-9/report');
    assert.ok(!('traceparent' in e), 'no trace context without one');
  });

  test("the distributed-tracing extension: the producing span's traceparent, on the body and the topic message", () => {
    const m = {
      batchId: 'b-7',
      state: 'failed',
      transactions: 1,
      chunks: 1,
      done: [],
      failed: [{ chunk: 0, reason: 'x' }],
      submittedAt: '2026-01-01T00:00:00.000Z',
      completedAt: '2026-01-01T00:00:01.000Z',
    } as unknown as Manifest;
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const { type, body } = batchEventBody(m, undefined, { id: 'evt_2', traceparent });
    assert.equal((JSON.parse(body) as { traceparent?: string }).traceparent, traceparent);
    const props = batchEventOutgoing({ id: 'evt_2', type, body }).applicationProperties;
    assert.equal(props?.['cloudEvents:traceparent'], traceparent);
    assert.equal(props?.[DIAGNOSTIC_ID], traceparent, 'what a Service Bus consumer continues');
    // A malformed context is dropped rather than sent.
    const bad = batchEventBody(m, undefined, { id: 'evt_3', traceparent: '00-zz-1-01' });
    assert.ok(!('traceparent' in (JSON.parse(bad.body) as object)));
  });
});
