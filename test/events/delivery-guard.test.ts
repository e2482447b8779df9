/**
 * What a delivery refuses before it sends: the SSRF guard's addresses (Azure's platform endpoint,
 * the IPv6 forms that reach IPv4 or the local network, mapped forms in either notation), a
 * callback whose origin left PUSHDRAIN_CALLBACK_ORIGINS (gone, at every attempt), a lookup that
 * outlives the attempt's deadline, and a signing secret shorter than 24 bytes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';

import { eventSettings } from '../../shared/config/event-settings';
import { ConfigError } from '../../shared/errors';
import { isBlockedAddress, mappedIPv4 } from '../../shared/events/address-guard';
import { deliveryAttempt } from '../../shared/events/delivery-attempt';
import { applyAttempt, type Delivery, type OutboxEvent } from '../../shared/events/outbox';
import { postSigned } from '../../shared/events/webhook-post';

/** Signs callbacks (no key is derived: one must be set with PUSHDRAIN_CALLBACK_ORIGINS). */
const CALLBACK_KEY = `whsk_${randomBytes(32).toString('base64')}`;

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

describe('the SSRF guard: the holes that matter in Azure', () => {
  test('refuses 168.63.129.16, ::/96, 64:ff9b:1::/48, 2002::/16, 100::/64 and what embeds a refused IPv4', () => {
    for (const a of [
      '168.63.129.16',
      '::7f00:1',
      '::a00:1',
      '::8.8.8.8', // IPv4-compatible: deprecated, refused as a whole
      '64:ff9b::7f00:1',
      '64:ff9b::808:808',
      '64:ff9b:1::1',
      '64:ff9b:1:ffff::a00:1',
      '2002:7f00:1::1',
      '2002:a9fe:a9fe::',
      '2002:808:808::1',
      '100::1',
      '100::ffff:ffff:ffff:ffff',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
      '::ffff:7f00:1', // what URL parsing makes of [::ffff:127.0.0.1]
      '::ffff:a9fe:a9fe',
      '::ffff:a83f:8110', // 168.63.129.16, mapped
      '::ffff:168.63.129.16',
      '::ffff:0:7f00:1', // IPv4-translated
      '0:0:0:0:0:ffff:127.0.0.1',
    ])
      assert.equal(isBlockedAddress(a), true, a);
    for (const a of ['168.63.129.17', '8.8.8.8', '2606:4700::1111', '::ffff:808:808', '2a01:111::1', '101::1'])
      assert.equal(isBlockedAddress(a), false, a);
  });

  test('an IPv4-mapped address reads as its IPv4 address in either notation', () => {
    assert.equal(mappedIPv4('::ffff:7f00:1'), '127.0.0.1');
    assert.equal(mappedIPv4('::FFFF:127.0.0.1'), '127.0.0.1');
    assert.equal(mappedIPv4('::ffff:0:a83f:8110'), '168.63.129.16');
    assert.equal(mappedIPv4('2606:4700::1111'), undefined);
    assert.equal(new URL('http://[::ffff:127.0.0.1]/').hostname, '[::ffff:7f00:1]', 'the form a URL gives');
  });

  test('a callback URL naming a mapped loopback literal is refused before any connection', async () => {
    let reached = 0;
    const server = createServer((_req, res) => {
      reached++;
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as AddressInfo;
    try {
      for (const host of ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::7f00:1]']) {
        const settings = eventSettings({
          PUSHDRAIN_WEBHOOK_SECRET: SECRET,
          PUSHDRAIN_CALLBACK_ORIGINS: `https://*.example.com`,
          PUSHDRAIN_CALLBACK_SIGNING_KEY: CALLBACK_KEY,
        });
        const got = await postSigned({
          url: `https://${host}:${port}/hook`,
          eventId: 'evt_1',
          body: '{}',
          secret: settings.secret!,
          allowPrivate: false,
        });
        assert.match(got.error ?? '', /^refused: /, host);
      }
      assert.equal(reached, 0);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('a callback whose origin left PUSHDRAIN_CALLBACK_ORIGINS', () => {
  test('its attempt sends nothing and settles it as gone (checked again at every attempt)', async () => {
    let reached = 0;
    const server = createServer((_req, res) => {
      reached++;
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const delivery = (): Delivery => ({
        kind: 'callback',
        target: `${origin}/cb?token=abc`,
        state: 'pending',
        attempts: 1,
        dueAt: new Date(0).toISOString(),
      });
      const event: OutboxEvent = { id: 'evt_1', type: 't', body: '{}', deliveries: [] };
      const allowed = deliveryAttempt({
        settings: eventSettings({
          PUSHDRAIN_WEBHOOK_SECRET: SECRET,
          PUSHDRAIN_CALLBACK_ORIGINS: origin,
          PUSHDRAIN_CALLBACK_SIGNING_KEY: CALLBACK_KEY,
        }),
        now: Date.now,
      });
      assert.equal((await allowed(delivery(), event)).status, 200, 'allowlisted: sent');
      assert.equal(reached, 1);

      const removed = deliveryAttempt({
        settings: eventSettings({
          PUSHDRAIN_WEBHOOK_SECRET: SECRET,
          PUSHDRAIN_CALLBACK_ORIGINS: 'https://other.example.com',
          PUSHDRAIN_CALLBACK_SIGNING_KEY: CALLBACK_KEY,
        }),
        now: Date.now,
      });
      const result = await removed(delivery(), event);
      assert.equal(reached, 1, 'nothing sent');
      assert.equal(result.gone, true);
      assert.match(result.error ?? '', /origin http:\/\/127\.0\.0\.1:\d+ is no longer in PUSHDRAIN_CALLBACK_ORIGINS/);
      assert.ok(!result.error?.includes('token'), 'the query is not shown');
      const d = delivery();
      assert.deepEqual(applyAttempt(d, result, [5, 300], Date.now()), { kind: 'finished' });
      assert.equal(d.state, 'gone', 'ends as gone, like a 410');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe("the attempt's deadline", () => {
  test('covers the name lookup: a resolver that never answers ends the attempt in time', async () => {
    const settings = eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: SECRET });
    const started = Date.now();
    // AbortSignal.timeout's timer does not hold the process open; a host's server does.
    const alive = setTimeout(() => undefined, 30_000);
    const got = await postSigned({
      url: 'https://hooks.example.com/h',
      eventId: 'evt_1',
      body: '{}',
      secret: settings.secret!,
      allowPrivate: false,
      timeoutMs: 300,
      lookup: () => new Promise(() => undefined),
    });
    clearTimeout(alive);
    assert.equal(got.error, 'no answer within 300 ms (name resolution)');
    assert.ok(Date.now() - started < 30_000, 'bounded (never waits on the lookup)');
  });
});

describe('PUSHDRAIN_WEBHOOK_SECRET', () => {
  test('shorter than 24 bytes is refused, naming the setting and never the value', () => {
    for (const bytes of [12, 16, 23]) {
      const secret = `whsec_${randomBytes(bytes).toString('base64')}`;
      assert.throws(
        () => eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: secret }),
        (e: unknown) =>
          e instanceof ConfigError &&
          e.message.includes('PUSHDRAIN_WEBHOOK_SECRET') &&
          e.message.includes(`is ${bytes} bytes`) &&
          !e.message.includes(secret.slice(6)),
        `${bytes} bytes`,
      );
    }
    for (const bytes of [24, 32, 64])
      assert.ok(eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: `whsec_${randomBytes(bytes).toString('base64')}` }).secret);
  });
});
