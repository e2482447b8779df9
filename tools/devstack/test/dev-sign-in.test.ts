/**
 * The local issuer's OpenID Connect endpoints over real https (its own self-signed certificate,
 * trusted here by pinning it as the CA) and its plain-http JWKS on the same port: a code is given
 * only to a dev redirect URI, is single-use and needs the PKCE verifier; a refresh token is
 * rotated; the access token is one the app's TokenVerifier accepts.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { TokenVerifier } from '../../../shared/auth/token-verifier';
import { type DevIssuer, issuerDir, startDevIssuer } from '../dev-issuer';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

let dir = '';
let iss: DevIssuer;
let ca = '';
const REDIRECT = 'http://127.0.0.1:7071/api/dashboard';

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pushdrain-dev-sign-in-'));
  iss = await startDevIssuer(dir);
  ca = (JSON.parse(readFileSync(join(issuerDir(dir), 'tls.json'), 'utf8')) as { cert: string }).cert;
});

after(async () => {
  await iss?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One https request to the issuer, trusting only its own certificate. */
function call(method: string, url: string, form?: Record<string, string>, origin?: string): Promise<Answer> {
  const body = form ? new URLSearchParams(form).toString() : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca,
        headers: {
          ...(body ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
          ...(origin ? { Origin: origin } : {}),
        },
        timeout: 10_000,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (p: Buffer) => parts.push(p));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const authority = (): string => iss.issuer.replace(/\/v2\.0$/, '');
const verifierAndChallenge = (): { verifier: string; challenge: string } => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

function authorizeParams(challenge: string, redirect = REDIRECT): Record<string, string> {
  return {
    client_id: iss.clientId ?? '',
    redirect_uri: redirect,
    response_type: 'code',
    scope: `${iss.scope} openid profile offline_access`,
    state: 'st-1',
    nonce: 'n-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    response_mode: 'fragment',
  };
}

/** Approves as `name` with `roles` and returns the code from the redirect's fragment. */
async function code(challenge: string, name: string, roles: string[]): Promise<string> {
  const form = new URLSearchParams(authorizeParams(challenge));
  form.set('dev_name', name);
  for (const r of roles) form.append('dev_role', r);
  const res = await new Promise<Answer>((resolve, reject) => {
    const req = request(
      `${authority()}/oauth2/v2.0/authorize`,
      { method: 'POST', ca, headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, timeout: 10_000 },
      (r) => {
        r.resume();
        r.on('end', () => resolve({ status: r.statusCode ?? 0, headers: r.headers, body: '' }));
      },
    );
    req.on('error', reject);
    req.end(form.toString());
  });
  assert.equal(res.status, 302);
  const location = String(res.headers.location);
  assert.ok(location.startsWith(`${REDIRECT}#`), location);
  const back = new URLSearchParams(location.slice(location.indexOf('#') + 1));
  assert.equal(back.get('state'), 'st-1');
  return back.get('code') ?? '';
}

const tokenForm = (c: string, verifier: string): Record<string, string> => ({
  client_id: iss.clientId ?? '',
  grant_type: 'authorization_code',
  code: c,
  redirect_uri: REDIRECT,
  code_verifier: verifier,
  scope: `${iss.scope} openid profile offline_access`,
});

describe('the local issuer speaks OpenID Connect (MSAL’s side of it)', () => {
  test('discovery names this https origin as issuer and endpoints; the JWKS is plain http on the same port', async () => {
    const d = await call('GET', `${iss.issuer}/.well-known/openid-configuration`, undefined, 'http://127.0.0.1:7071');
    assert.equal(d.status, 200);
    assert.equal(d.headers['access-control-allow-origin'], 'http://127.0.0.1:7071');
    const doc = JSON.parse(d.body) as Record<string, string>;
    assert.equal(doc.issuer, iss.issuer);
    assert.equal(doc.authorization_endpoint, `${authority()}/oauth2/v2.0/authorize`);
    assert.equal(doc.token_endpoint, `${authority()}/oauth2/v2.0/token`);
    assert.ok(iss.jwksUrl.startsWith('http://127.0.0.1:'));
    const jwks = await fetch(iss.jwksUrl);
    assert.equal(jwks.status, 200);
    const foreign = await call('GET', `${iss.issuer}/.well-known/openid-configuration`, undefined, 'https://evil.test');
    assert.equal(foreign.headers['access-control-allow-origin'], undefined, 'no CORS for a non-loopback origin');
  });

  test('authorize refuses an unknown client, a foreign redirect URI and a request without PKCE, without redirecting', async () => {
    const { challenge } = verifierAndChallenge();
    const cases: Record<string, string>[] = [
      { ...authorizeParams(challenge), client_id: 'someone-else' },
      authorizeParams(challenge, 'https://evil.test/api/dashboard'),
      authorizeParams(challenge, 'http://127.0.0.1:7071/elsewhere'),
      { ...authorizeParams(challenge), code_challenge_method: 'plain' },
    ];
    for (const q of cases) {
      const res = await call('GET', `${authority()}/oauth2/v2.0/authorize?${new URLSearchParams(q).toString()}`);
      assert.equal(res.status, 400, JSON.stringify(q));
      assert.equal(res.headers.location, undefined);
    }
    const ok = await call(
      'GET',
      `${authority()}/oauth2/v2.0/authorize?${new URLSearchParams(authorizeParams(challenge)).toString()}`,
    );
    assert.equal(ok.status, 200);
    assert.match(ok.body, /id="dev-sign-in"/);
    assert.match(String(ok.headers['content-security-policy']), /form-action 'self' http:\/\/127\.0\.0\.1:7071/);
  });

  test('the code needs the PKCE verifier and is single-use; the tokens are ones the app accepts; refresh rotates', async () => {
    const { verifier, challenge } = verifierAndChallenge();
    const wrong = await call(
      'POST',
      `${authority()}/oauth2/v2.0/token`,
      tokenForm(await code(challenge, 'alice', ['Batches.Submit']), randomBytes(32).toString('base64url')),
    );
    assert.equal(wrong.status, 400);
    assert.equal((JSON.parse(wrong.body) as { error: string }).error, 'invalid_grant');

    const c = await code(challenge, 'alice', ['Batches.Submit']);
    const res = await call('POST', `${authority()}/oauth2/v2.0/token`, tokenForm(c, verifier));
    assert.equal(res.status, 200, res.body);
    const tokens = JSON.parse(res.body) as {
      access_token: string;
      id_token: string;
      refresh_token: string;
      client_info: string;
      scope: string;
    };
    assert.ok(tokens.scope.split(' ').includes(iss.scope ?? ''));
    const again = await call('POST', `${authority()}/oauth2/v2.0/token`, tokenForm(c, verifier));
    assert.equal(again.status, 400, 'a code is used once');

    const verify = new TokenVerifier({ issuer: iss.issuer, audiences: [iss.audience], jwksUrl: iss.jwksUrl });
    const p = await verify.verify(tokens.access_token);
    assert.equal(p.kind, 'token');
    assert.deepEqual([...p.roles], ['Batches.Submit']);
    assert.equal(p.kind === 'token' ? p.submitter.name : '', 'alice');
    const idClaims = JSON.parse(Buffer.from(tokens.id_token.split('.')[1] ?? '', 'base64url').toString()) as Record<
      string,
      string
    >;
    assert.equal(idClaims.nonce, 'n-1');
    assert.equal(idClaims.aud, iss.clientId);

    const refreshForm = {
      client_id: iss.clientId ?? '',
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      scope: iss.scope ?? '',
    };
    const renewed = await call('POST', `${authority()}/oauth2/v2.0/token`, refreshForm);
    assert.equal(renewed.status, 200, renewed.body);
    const p2 = await verify.verify((JSON.parse(renewed.body) as { access_token: string }).access_token);
    assert.deepEqual([...p2.roles], ['Batches.Submit'], 'the roles chosen at sign-in are kept');
    assert.equal((await call('POST', `${authority()}/oauth2/v2.0/token`, refreshForm)).status, 400, 'rotated');
  });
});
