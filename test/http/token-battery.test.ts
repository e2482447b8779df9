/**
 * Access tokens as Entra means them, through the real handlers on Azurite with tokens of the local
 * issuer: the tokens Entra issues to a person through a client (`scp` with this API's scope) and to
 * an app (`idtyp=app`, or `oid` = `sub`, no `scp`) pass; an ID token, a token with a `nonce`, a
 * delegated token without the scope, an app token with `scp`, a wrong `idtyp`, and an unknown
 * calling app where an allowlist is set are refused with the status docs/SECURITY.md gives, a
 * reason that names no claim value, and no Storage request. Each case is the only one a check
 * catches, so removing any check fails a case.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { HttpRequest, type HttpResponseInit } from '@azure/functions';

import { getStatus } from '../../functions/status-http';
import type { PushdrainApp } from '../../shared/app';
import { describeSubmitter } from '../../shared/auth/principal';
import { authSettings } from '../../shared/config/auth-settings';
import { ConfigError } from '../../shared/errors';
import { DEV_CLIENT_APP_ID } from '../../tools/devstack/dev-issuer';
import { context, logs } from '../support/invoke';
import { post } from '../support/route-calls';
import { type TestRuntime, testRuntime, useStorage } from '../support/storage';
import { type TestIssuer, testIssuer } from '../support/tokens';

useStorage();

let iss: TestIssuer;
before(async () => {
  iss = await testIssuer();
});
after(async () => {
  await iss.close();
});

const READ = ['Batches.Read'] as const;
const OTHER_APP = '99999999-8888-7777-6666-555555555555';

const status = (app: PushdrainApp, token: string): Promise<HttpResponseInit> =>
  getStatus(
    app,
    new HttpRequest({
      method: 'GET',
      url: 'http://localhost/api/ops/status',
      headers: { authorization: `Bearer ${token}` },
    }),
    context('opsStatus'),
  );

const requests = (rt: TestRuntime): number =>
  Object.values(rt.app.storageTransactions()).reduce((n: number, v) => n + (typeof v === 'number' ? v : 0), 0);

interface Case {
  token: () => Promise<string>;
  status: 200 | 401 | 403;
  /** Claim values the answer must not repeat. */
  secret?: string[];
}

async function run(rt: TestRuntime, cases: Record<string, Case>): Promise<void> {
  for (const [label, c] of Object.entries(cases)) {
    const used = requests(rt);
    const res = await status(rt.app, await c.token());
    assert.equal(res.status, c.status, `${label}: ${JSON.stringify(res.jsonBody)}`);
    if (c.status === 200) continue;
    const body = res.jsonBody as { error: string; message: string };
    assert.equal(body.error, c.status === 401 ? 'unauthorized' : 'forbidden', label);
    assert.ok(body.message.length > 0, label);
    for (const s of c.secret ?? []) assert.ok(!JSON.stringify(body).includes(s), `${label}: the answer repeats ${s}`);
    const challenge = (res.headers as Record<string, string>)['WWW-Authenticate'];
    if (c.status === 401) assert.equal(challenge, 'Bearer error="invalid_token"', label);
    assert.equal(requests(rt), used, `${label} made a Storage request`);
  }
}

describe('the token battery: access tokens only, and the right kind', () => {
  test('the tokens Entra issues to a person through a client, and to an app, pass', async () => {
    const rt = await testRuntime(iss.env);
    await run(rt, {
      'delegated, scp with the API scope': { token: () => iss.token('rita', READ), status: 200 },
      'delegated, scp with the API scope among others': {
        token: () => iss.crafted({ name: 'rita', roles: READ }, { set: { scp: 'openid user_impersonation profile' } }),
        status: 200,
      },
      'app, idtyp app': { token: () => iss.token('reporter', READ, { app: true }), status: 200 },
      'app, no idtyp claim, oid equal to sub': {
        token: () => iss.crafted({ name: 'reporter', roles: READ, app: true }, { drop: ['idtyp'] }),
        status: 200,
      },
    });
  });

  test('an ID token, a nonce, a missing scope, an app token with scp, a wrong idtyp: refused', async () => {
    const rt = await testRuntime(iss.env);
    const idToken = { set: { aud: DEV_CLIENT_APP_ID, nonce: 'nonce-4711' }, drop: ['scp', 'azp', 'ver'] };
    await run(rt, {
      // What MSAL receives beside the access token: audience the client id (an accepted audience here).
      'an ID token': { token: () => iss.crafted({ name: 'rita', roles: READ }, idToken), status: 401 },
      'an ID token without its nonce': {
        token: () => iss.crafted({ name: 'rita', roles: READ }, { ...idToken, set: { aud: DEV_CLIENT_APP_ID } }),
        status: 401,
      },
      'a delegated token with a nonce': {
        token: () => iss.crafted({ name: 'rita', roles: READ }, { set: { nonce: 'nonce-4711' } }),
        status: 401,
        secret: ['nonce-4711'],
      },
      'a delegated token without the API scope': {
        token: () => iss.crafted({ name: 'rita', roles: READ }, { set: { scp: 'Mail.Read Other.Scope' } }),
        status: 403,
        secret: ['Mail.Read', 'Other.Scope'],
      },
      'a delegated token with an empty scp': {
        token: () => iss.crafted({ name: 'rita', roles: READ }, { set: { scp: '' } }),
        status: 403,
      },
      'an app token with scp': {
        token: () => iss.crafted({ name: 'reporter', roles: READ, app: true }, { set: { scp: 'user_impersonation' } }),
        status: 401,
      },
      'a wrong idtyp': {
        token: () => iss.crafted({ name: 'rita', roles: READ }, { set: { idtyp: 'device-4711' } }),
        status: 401,
        secret: ['device-4711'],
      },
      'idtyp user without scp (oid equal to sub)': {
        token: () => iss.crafted({ name: 'reporter', roles: READ, app: true }, { set: { idtyp: 'user' } }),
        status: 401,
      },
    });
    const scoped = await status(
      rt.app,
      await iss.crafted({ name: 'rita', roles: READ }, { set: { scp: 'Other.Scope' } }),
    );
    assert.equal((scoped.headers as Record<string, string>)['WWW-Authenticate'], 'Bearer error="insufficient_scope"');
  });

  test('with PUSHDRAIN_AUTH_CLIENT_APPS only the listed calling apps pass (azp, or appid in v1 tokens)', async () => {
    const rt = await testRuntime({
      ...iss.env,
      PUSHDRAIN_AUTH_CLIENT_APPS: `${OTHER_APP}, ${DEV_CLIENT_APP_ID.toUpperCase()}`,
    });
    const stranger = '12345678-1234-1234-1234-123456789abc';
    await run(rt, {
      'a listed azp': { token: () => iss.token('rita', READ), status: 200 },
      'a listed app, v1 appid': {
        token: () =>
          iss.crafted({ name: 'reporter', roles: READ, app: true }, { set: { appid: OTHER_APP }, drop: ['azp'] }),
        status: 200,
      },
      'an unknown azp': {
        token: () => iss.crafted({ name: 'rita', roles: READ }, { set: { azp: stranger } }),
        status: 403,
        secret: [stranger],
      },
      'no calling app at all': {
        token: () => iss.crafted({ name: 'reporter', roles: READ, app: true }, { drop: ['azp'] }),
        status: 403,
      },
    });
    const open = await testRuntime(iss.env);
    await run(open, {
      'without the setting any calling app passes': {
        token: () => iss.crafted({ name: 'rita', roles: READ }, { set: { azp: stranger } }),
        status: 200,
      },
    });
  });

  test('control characters in claims never reach a log line or a manifest', async () => {
    const rt = await testRuntime(iss.env);
    const forged = 'mallory\nbatch b-1: accepted, submitted by alice\r\u0085\u2028\u202e\u0000\u001b[31m';
    const token = await iss.crafted(
      { name: 'mallory', roles: ['Batches.Submit'] },
      { set: { name: forged, azp: `${DEV_CLIENT_APP_ID}\n` } },
    );
    const from = logs.length;
    const res = await post(rt.app, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
    const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
    const lines = logs.slice(from).filter((l) => l.includes('submitted by'));
    assert.equal(lines.length, 1, logs.slice(from).join('\n'));
    assert.ok(!CONTROL.test(lines[0]?.replace(/^\w+: /, '') ?? ''), JSON.stringify(lines[0]));
    assert.match(lines[0] ?? '', /submitted by malloryba/);
    const batchId = (res.jsonBody as { batchId: string }).batchId;
    const submitter = (await rt.observerParts.manifests.read(batchId))?.manifest.submitter;
    assert.equal(submitter?.name, 'mallorybatch b-1: accepted, submitted by alice[31m');
    assert.equal(submitter?.appId, DEV_CLIENT_APP_ID);
    // A manifest an older version wrote may still hold them: the log line strips them again.
    assert.ok(!CONTROL.test(describeSubmitter({ objectId: 'o-1', name: forged, appId: 'a\u2029b' })));
  });

  test('a bad PUSHDRAIN_AUTH_CLIENT_APPS fails at start with a message naming it', () => {
    for (const bad of ['not-an-app-id', `${OTHER_APP},pushdrain-dev`]) {
      assert.throws(
        () => authSettings({ ...iss.env, PUSHDRAIN_AUTH_CLIENT_APPS: bad }),
        (e: unknown) => e instanceof ConfigError && e.setting === 'PUSHDRAIN_AUTH_CLIENT_APPS',
        bad,
      );
    }
    assert.deepEqual(authSettings({ ...iss.env, PUSHDRAIN_AUTH_CLIENT_APPS: ' ' }).tokens?.clientApps, undefined);
  });
});
