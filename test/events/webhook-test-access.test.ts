/**
 * Who may send a test event (`POST /api/ops/webhooks/test`), through the real handler on Azurite
 * with a real receiver on 127.0.0.1 verifying with `standardwebhooks`: with keys the platform requires
 * the admin key (the route's registration says `admin`); with PUSHDRAIN_AUTH=entra only an
 * `Operations.Admin` token gets through, and every refusal makes no Storage request and sends
 * nothing. The probe itself makes no Storage request either; with no webhook configured it is a 409.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { HttpRequest, type HttpResponseInit } from '@azure/functions';

import { postWebhookTest } from '../../functions/webhooks-http';
import type { PushdrainApp } from '../../shared/app';
import type { TestEventResult } from '../../shared/events/test-event';
import { context } from '../support/invoke';
import { repoRoot } from '../support/repo';
import { type TestRuntime, testRuntime, useStorage } from '../support/storage';
import { type TestIssuer, testIssuer } from '../support/tokens';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

useStorage();

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
let iss: TestIssuer;
let hook: WebhookReceiver;

before(async () => {
  [iss, hook] = await Promise.all([testIssuer(), startWebhookReceiver(SECRET)]);
});
after(async () => {
  await iss?.close();
  await hook?.close();
});

const webhookEnv = (): Record<string, string> => ({
  PUSHDRAIN_WEBHOOK_URL: hook.url,
  PUSHDRAIN_WEBHOOK_SECRET: SECRET,
});

function send(app: PushdrainApp, headers: Record<string, string>): Promise<HttpResponseInit> {
  return postWebhookTest(
    app,
    new HttpRequest({ method: 'POST', url: 'http://localhost/api/ops/webhooks/test', headers }),
    context('opsWebhookTest'),
  );
}

const requests = (rt: TestRuntime): number =>
  Object.values(rt.app.storageTransactions()).reduce((n: number, v) => n + (typeof v === 'number' ? v : 0), 0);

describe('POST /api/ops/webhooks/test: admins only, and a probe that writes nothing', () => {
  test('keys: the platform requires the admin key for the route', () => {
    const root = repoRoot();
    const run = spawnSync(process.execPath, [join(root, 'dist/tools/devstack/host/print-registrations.js')], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const routes = (JSON.parse(run.stdout) as { routes: { template: string; authLevel: string; methods: string[] }[] })
      .routes;
    const route = routes.find((r) => r.template === 'api/ops/webhooks/test');
    assert.deepEqual(route && { authLevel: route.authLevel, methods: route.methods }, {
      authLevel: 'admin',
      methods: ['POST'],
    });
  });

  test('entra: every role but Operations.Admin is refused, with no Storage request and nothing sent', async () => {
    const rt = await testRuntime({ ...iss.env, ...webhookEnv() });
    const refused: [string, Record<string, string>, number][] = [
      ['no token', {}, 401],
      ['no role', { authorization: `Bearer ${await iss.token('carol', [])}` }, 403],
      ['Batches.Submit', { authorization: `Bearer ${await iss.token('alice', ['Batches.Submit'])}` }, 403],
      ['Batches.Read', { authorization: `Bearer ${await iss.token('rita', ['Batches.Read'])}` }, 403],
    ];
    const used = requests(rt);
    for (const [who, headers, status] of refused) {
      const res = await send(rt.app, headers);
      assert.equal(res.status, status, `${who}: ${JSON.stringify(res.jsonBody)}`);
      if (status === 403)
        assert.deepEqual((res.jsonBody as { requiredRoles: string[] }).requiredRoles, ['Operations.Admin'], who);
    }
    assert.equal(requests(rt), used, 'a refused request makes no Storage request');
    assert.equal(hook.attempts.length, 0, 'a refused request sends nothing');

    const admin = await send(rt.app, { authorization: `Bearer ${await iss.token('oscar', ['Operations.Admin'])}` });
    assert.equal(admin.status, 200, JSON.stringify(admin.jsonBody));
    const result = admin.jsonBody as TestEventResult;
    assert.deepEqual(
      result.targets.map((t) => [t.target, t.ok, t.status]),
      [[hook.url, true, 200]],
    );
    assert.equal(hook.requests.at(-1)?.webhookId, result.eventId, 'verified by the receiver');
    assert.equal(hook.requests.at(-1)?.event.type, 'com.pushdrain.webhook.test');
    assert.equal(requests(rt), used, 'the probe makes no Storage request: it records nothing');
  });

  test('with no webhook configured: 409 no_webhooks, and nothing written', async () => {
    const rt = await testRuntime();
    const used = requests(rt);
    const res = await send(rt.app, {});
    assert.equal(res.status, 409);
    const body = res.jsonBody as { error: string; message: string };
    assert.equal(body.error, 'no_webhooks');
    assert.match(body.message, /PUSHDRAIN_WEBHOOK_URL is not set/);
    assert.equal(requests(rt), used);
  });

  test('an unreachable webhook is a failed target with its reason and time, not a failed request', async () => {
    const rt = await testRuntime({
      PUSHDRAIN_WEBHOOK_URL: 'http://127.0.0.1:9/hook?token=s3cr3t',
      PUSHDRAIN_WEBHOOK_SECRET: SECRET,
    });
    const res = await send(rt.app, {});
    assert.equal(res.status, 200);
    const r = res.jsonBody as TestEventResult;
    assert.equal(r.failed, 1);
    assert.equal(r.targets[0]?.target, 'http://127.0.0.1:9/hook', 'the query (a token) is never shown');
    assert.equal(r.targets[0]?.ok, false);
    assert.match(r.targets[0]?.error ?? '', /^127\.0\.0\.1:9: ECONNREFUSED$/);
    assert.equal(JSON.stringify(r).includes('s3cr3t'), false);
  });
});
