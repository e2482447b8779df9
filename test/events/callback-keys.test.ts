/**
 * The callback key model: a client's callback is signed `v1a` (ed25519) and verified with the public
 * keys of GET /api/events/keys (anonymous, no Storage request), while the operator's webhooks keep
 * `v1` with PUSHDRAIN_WEBHOOK_SECRET. Whatever a client holds to verify (the `whpk_` key, its JWK),
 * used every way it could be, signs nothing that the operator's receiver or another client's accepts.
 */
import assert from 'node:assert/strict';
import { createPublicKey, randomBytes, sign } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';

import { Webhook } from 'standardwebhooks';

import { getEventKeys } from '../../functions/event-keys-http';
import { eventSettings } from '../../shared/config/event-settings';
import { loadSettings } from '../../shared/config/settings';
import { ConfigError } from '../../shared/errors';
import { CallbackSigner, ed25519FromSeed, type PublishedKey } from '../../shared/events/callback-signer';
import { deliveryAttempt } from '../../shared/events/delivery-attempt';
import type { Delivery, OutboxEvent } from '../../shared/events/outbox';
import { signatureHeaders } from '../../shared/events/webhook-post';
import { verifyCallback } from '../support/callback-verifier';
import { type TestRuntime, testRuntime, useStorage } from '../support/storage';

/** Signs callbacks (no key is derived: one must be set with PUSHDRAIN_CALLBACK_ORIGINS). */
const CALLBACK_KEY = `whsk_${randomBytes(32).toString('base64')}`;

useStorage();

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const BODY = JSON.stringify({
  type: 'com.pushdrain.batch.completed',
  subject: 'b-1',
  data: { status: 'completed', recipient: { kind: 'key' } },
});

/** The operator's receiver (README: `standardwebhooks` with the secret). */
const operatorAccepts = (headers: Record<string, string>): boolean => {
  try {
    new Webhook(SECRET).verify(BODY, headers);
    return true;
  } catch {
    return false;
  }
};
/** A client's receiver (README: `v1a` with the published keys). */
const clientAccepts = (headers: Record<string, string>, keys: readonly string[]): boolean => {
  try {
    verifyCallback(BODY, headers, keys, { kind: 'key' });
    return true;
  } catch {
    return false;
  }
};

describe('callback signatures (v1a, ed25519)', () => {
  test('a callback verifies with the published key only; a webhook with the secret only', () => {
    const settings = eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: SECRET, PUSHDRAIN_CALLBACK_SIGNING_KEY: CALLBACK_KEY });
    const signer = new CallbackSigner(settings.callbackKeys);
    const keys = signer.published().keys.map((k) => k.whpk);
    const at = new Date();
    const callback = signatureHeaders(signer, 'evt_1', BODY, at);
    assert.match(callback['webhook-signature']!, /^v1a,[A-Za-z0-9+/]{86}==$/);
    assert.equal(clientAccepts(callback, keys), true);
    assert.equal(operatorAccepts(callback), false, 'the operator receiver takes no callback signature');
    const webhook = signatureHeaders(settings.secret!, 'evt_1', BODY, at);
    assert.match(webhook['webhook-signature']!, /^v1,/);
    assert.equal(operatorAccepts(webhook), true, 'operator webhooks as before');
    assert.equal(clientAccepts(webhook, keys), false, 'a client accepts no v1 signature');
    const tampered = { ...callback, 'webhook-id': 'evt_2' };
    assert.equal(clientAccepts(tampered, keys), false, 'the id is signed');
  });

  test("a client's verification material cannot produce a signature another receiver accepts", () => {
    const settings = eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: SECRET, PUSHDRAIN_CALLBACK_SIGNING_KEY: CALLBACK_KEY });
    const published = new CallbackSigner(settings.callbackKeys).published().keys;
    const keys = published.map((k) => k.whpk);
    const [jwk] = published as [PublishedKey];
    const raw = Buffer.from(jwk.x, 'base64url');
    const at = new Date();
    const ts = String(Math.floor(at.getTime() / 1000));
    const content = Buffer.from(`evt_forged.${ts}.${BODY}`);
    // Node refuses to sign with a public key at all.
    const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
    assert.throws(() => sign(null, content, publicKey));
    // Every other use of the material a client holds: as an HMAC secret, as an ed25519 seed.
    const attempts: Record<string, string>[] = [
      new Webhook(`whsec_${raw.toString('base64')}`).sign('evt_forged', at, BODY),
      new Webhook(`whsec_${Buffer.from(jwk.whpk).toString('base64')}`).sign('evt_forged', at, BODY),
      `v1a,${sign(null, content, ed25519FromSeed(raw)).toString('base64')}`,
      `v1a,${sign(null, content, ed25519FromSeed(Buffer.from(jwk.kid.padEnd(32, '0')))).toString('base64')}`,
    ].map((signature) => ({ 'webhook-id': 'evt_forged', 'webhook-timestamp': ts, 'webhook-signature': signature }));
    for (const forged of attempts) {
      assert.equal(operatorAccepts(forged), false, `operator: ${forged['webhook-signature']}`);
      assert.equal(clientAccepts(forged, keys), false, `another client: ${forged['webhook-signature']}`);
    }
  });

  test('PUSHDRAIN_CALLBACK_SIGNING_KEY: an explicit key (a rotation: each signs), a bad one named, never echoed', () => {
    const current = `whsk_${randomBytes(32).toString('base64')}`;
    const previous = `whsk_${randomBytes(32).toString('base64')}`;
    const settings = eventSettings({
      PUSHDRAIN_WEBHOOK_SECRET: SECRET,
      PUSHDRAIN_CALLBACK_SIGNING_KEY: `${current}, ${previous}`,
    });
    const signer = new CallbackSigner(settings.callbackKeys);
    const [a, b] = signer.published().keys.map((k) => k.whpk);
    const headers = signatureHeaders(signer, 'evt_1', BODY, new Date());
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    assert.equal(clientAccepts(headers, [a!]), true, 'a client that has the new key');
    assert.equal(clientAccepts(headers, [b!]), true, 'a client still on the old key');
    assert.deepEqual(eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: SECRET }).callbackKeys, [], 'none derived');
    const bad = `whsk_${randomBytes(16).toString('base64')}`;
    assert.throws(
      () => eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: SECRET, PUSHDRAIN_CALLBACK_SIGNING_KEY: bad }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.message.includes('PUSHDRAIN_CALLBACK_SIGNING_KEY: entry 1') &&
        !e.message.includes(bad.slice(5)),
    );
    for (const text of [JSON.stringify(settings), String(settings.callbackKeys)])
      assert.ok(!text.includes(current.slice(5)), 'the key prints as [redacted]');
  });

  // loadSettings is what the worker's appStart hook runs first (functions/pushdrain-app.ts).
  test('no key is derived from the webhook secret: callback origins without a key stop the app at start', () => {
    const env = { PUSHDRAIN_WEBHOOK_SECRET: SECRET, PUSHDRAIN_CALLBACK_ORIGINS: 'https://billing.example.com' };
    for (const load of [
      () => eventSettings(env),
      () => loadSettings({ StorageConnection: 'UseDevelopmentStorage=true', ...env }),
    ])
      assert.throws(
        load,
        (e: unknown) =>
          e instanceof ConfigError &&
          /PUSHDRAIN_CALLBACK_SIGNING_KEY: is required with PUSHDRAIN_CALLBACK_ORIGINS/.test(e.message) &&
          !e.message.includes(SECRET.slice(6)),
      );
    // Webhooks alone need no callback key, and sign nothing v1a.
    assert.deepEqual(
      eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: SECRET, PUSHDRAIN_WEBHOOK_URL: 'https://ops.example/h' }).callbackKeys,
      [],
    );
  });

  test('a delivery attempt signs a callback v1a and a webhook v1, each verified by its receiver', async () => {
    const got: Record<string, string>[] = [];
    const server = createServer((req, res) => {
      req.resume();
      got.push(req.headers as Record<string, string>);
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const settings = eventSettings({
        PUSHDRAIN_WEBHOOK_SECRET: SECRET,
        PUSHDRAIN_CALLBACK_ORIGINS: origin,
        PUSHDRAIN_CALLBACK_SIGNING_KEY: CALLBACK_KEY,
      });
      const attempt = deliveryAttempt({ settings, now: Date.now });
      const event: OutboxEvent = { id: 'evt_1', type: 't', body: BODY, deliveries: [] };
      const d = (kind: Delivery['kind']): Delivery => ({
        kind,
        target: `${origin}/h`,
        state: 'pending',
        attempts: 0,
        dueAt: new Date().toISOString(),
      });
      assert.equal((await attempt(d('callback'), event)).status, 204);
      assert.equal((await attempt(d('webhook'), event)).status, 204);
      const keys = new CallbackSigner(settings.callbackKeys).published().keys.map((k) => k.whpk);
      assert.equal(clientAccepts(got[0]!, keys), true, 'the callback: v1a');
      assert.equal(operatorAccepts(got[0]!), false);
      assert.equal(operatorAccepts(got[1]!), true, 'the webhook: v1');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('GET /api/events/keys', () => {
  test('answers the public keys as a JWKS, with no Storage request and nothing secret', async () => {
    const rt: TestRuntime = await testRuntime({
      PUSHDRAIN_WEBHOOK_SECRET: SECRET,
      PUSHDRAIN_CALLBACK_ORIGINS: 'https://billing.example.com',
      PUSHDRAIN_CALLBACK_SIGNING_KEY: CALLBACK_KEY,
    });
    const requests = (): number =>
      Object.values(rt.app.storageTransactions()).reduce((n: number, v) => n + (typeof v === 'number' ? v : 0), 0);
    const before = requests();
    const res = getEventKeys(rt.app);
    assert.equal(res.status, 200);
    assert.match(String((res.headers as Record<string, string>)['Cache-Control']), /public/);
    const { keys } = res.jsonBody as { keys: PublishedKey[] };
    assert.equal(keys.length, 1);
    assert.deepEqual(
      { kty: keys[0]!.kty, crv: keys[0]!.crv, alg: keys[0]!.alg, use: keys[0]!.use },
      { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' },
    );
    assert.match(keys[0]!.whpk, /^whpk_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Object.keys(keys[0]!).includes('d'), false, 'no private part');
    assert.ok(!JSON.stringify(res.jsonBody).includes(SECRET.slice(6)));
    assert.equal(requests(), before, 'no Storage request');
  });
});
