/**
 * A callback is bound to its recipient: every event names, inside what is signed, whom it belongs
 * to (an app token's application id, a user's object id, `key` for a function-key holder), and a
 * receiver that checks it as README does (test/support/callback-verifier.ts) refuses every event
 * not meant for it: another client's batch aimed at it, and another client's event replayed to it.
 * Real route, real pipeline on Azurite, real receivers on 127.0.0.1, tokens of the local issuer.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { getEventKeys } from '../../functions/event-keys-http';
import type { PublishedKey } from '../../shared/events/callback-signer';
import { completed, pump } from '../support/invoke';
import { runCli } from '../support/local-stack';
import { until } from '../support/poll';
import { post } from '../support/route-calls';
import { testRuntime, useStorage } from '../support/storage';
import { type TestIssuer, testIssuer } from '../support/tokens';
import { type ReceivedEvent, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

useStorage();

const APP_A = 'aaaaaaaa-0000-4000-8000-00000000000a';
const APP_B = 'bbbbbbbb-0000-4000-8000-00000000000b';

let iss: TestIssuer;
let keys: string[] = [];
/** Client A's receiver and client B's, each checking its own application id. */
let receiverA: WebhookReceiver;
let receiverB: WebhookReceiver;

before(async () => {
  iss = await testIssuer('entra');
  [receiverA, receiverB] = await Promise.all([
    startWebhookReceiver({ publicKeys: () => keys, me: { kind: 'app', id: APP_A } }, '/a/events'),
    startWebhookReceiver({ publicKeys: () => keys, me: { kind: 'app', id: APP_B } }, '/b/events'),
  ]);
});

after(async () => {
  await Promise.all([receiverA?.close(), receiverB?.close(), iss?.close()]);
});

/** An app's own token (`idtyp=app`) issued to `appId`. */
const appToken = (name: string, appId: string): Promise<string> =>
  iss.crafted({ name, roles: ['Batches.Submit'], app: true }, { set: { azp: appId } });

async function runtime() {
  const rt = await testRuntime({
    ...iss.env,
    PUSHDRAIN_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    PUSHDRAIN_CALLBACK_SIGNING_KEY: `whsk_${randomBytes(32).toString('base64')}`,
    PUSHDRAIN_CALLBACK_ORIGINS: [receiverA, receiverB].map((r) => new URL(r.url).origin).join(','),
  });
  keys = (getEventKeys(rt.app).jsonBody as { keys: PublishedKey[] }).keys.map((k) => k.whpk);
  return rt;
}

/** Submits one batch with `token` and `Callback-Url: url`, and runs it to completion. */
async function submitAndFinish(rt: Awaited<ReturnType<typeof runtime>>, token: string, url: string): Promise<string> {
  const res = await post(rt.app, { authorization: `Bearer ${token}`, 'callback-url': url });
  assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
  const { batchId } = res.jsonBody as { batchId: string };
  await pump(rt.app, rt.events, () => completed(rt.observer, batchId), 60_000);
  return batchId;
}

describe('a callback names its recipient inside what is signed', () => {
  test("A's batch aimed at B's receiver, and A's event replayed to B, fail B's documented check", async () => {
    const rt = await runtime();
    const tokenA = await appToken('client-a', APP_A);

    // Control: A's batch to A's own receiver verifies, and names A's application id.
    const own = await submitAndFinish(rt, tokenA, receiverA.url);
    const got: ReceivedEvent = await until('A receives its own event', 20_000, () =>
      receiverA.requests.find((r) => r.event.subject === own),
    );
    assert.deepEqual(got.event.data.recipient, { kind: 'app', id: APP_A });
    assert.equal(receiverA.unverified, 0);

    // A aims its batch at B's receiver: validly signed, but not B's, so B refuses it.
    const aimed = await submitAndFinish(rt, tokenA, receiverB.url);
    await until('B answers the delivery', 20_000, () => (receiverB.unverified > 0 ? true : undefined));
    assert.equal(receiverB.unverified, 1, `A's batch ${aimed} aimed at B`);
    assert.equal(receiverB.requests.length, 0, 'B accepted nothing');

    // A replays to B the event it received, headers and bytes as they came, within the 5 minutes.
    const replay = await fetch(receiverB.url, { method: 'POST', body: got.raw.body, headers: got.raw.headers });
    assert.equal(replay.status, 400, "B's check refuses A's replayed event");
    assert.equal(receiverB.unverified, 2);
    assert.equal(receiverB.requests.length, 0);

    // The same bytes are genuinely signed: what refused them is the recipient, not the signature.
    const toA = await fetch(receiverA.url, { method: 'POST', body: got.raw.body, headers: got.raw.headers });
    assert.equal(toA.status, 200, "A's own receiver still accepts its own event (a duplicate: dedupe on webhook-id)");
    // The CLI's verifier says the same, against the keys the app publishes.
    const keysServer = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(getEventKeys(rt.app).jsonBody));
    });
    await new Promise<void>((r) => keysServer.listen(0, '127.0.0.1', () => r()));
    const dir = mkdtempSync(join(tmpdir(), 'pushdrain-callback-'));
    try {
      writeFileSync(join(dir, 'body.json'), got.raw.body);
      writeFileSync(join(dir, 'headers.json'), JSON.stringify(got.raw.headers));
      const verify = (me: string) =>
        runCli(
          [
            '--url',
            `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}`,
            'callbacks',
            'verify',
            join(dir, 'body.json'),
            '--headers',
            join(dir, 'headers.json'),
            '--me',
            me,
          ],
          {},
          60_000,
        );
      const asB = await verify(`app:${APP_B}`);
      assert.equal(asB.code, 3, asB.stderr);
      assert.match(asB.stderr, /not verified: not an event for me/);
      const asA = await verify(`app:${APP_A}`);
      assert.equal(asA.code, 0, asA.stderr);
      assert.match(asA.stdout, /^verified: com\.pushdrain\.batch\.completed /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await new Promise((r) => keysServer.close(r));
    }
  });

  test("a user's batch names the user's object id; an app's receiver refuses it, even through that app", async () => {
    const rt = await runtime();
    // A person signed in through app A (delegated token, azp = A): the batch is the person's.
    const user = await iss.crafted({ name: 'dora', roles: ['Batches.Submit'] }, { set: { azp: APP_A } });
    const before = receiverA.unverified;
    const batchId = await submitAndFinish(rt, user, receiverA.url);
    await until("A's receiver answers", 20_000, () => (receiverA.unverified > before ? true : undefined));
    assert.equal(receiverA.requests.filter((r) => r.event.subject === batchId).length, 0);
    const stored = (await rt.observerParts.manifests.read(batchId))?.manifest.events?.[0];
    const data = (JSON.parse(stored!.body) as { data: { recipient: unknown; submitter: { objectId: string } } }).data;
    assert.deepEqual(data.recipient, { kind: 'user', id: data.submitter.objectId });
  });
});
