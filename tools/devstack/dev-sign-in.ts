/**
 * The local issuer's OpenID Connect side, enough for MSAL in the status page to run the code it
 * runs against Entra: the discovery document, `/authorize` (a form where a developer picks a name
 * and roles, then a redirect back with a code) and `/token` (the authorization code with PKCE
 * S256 checked, and refresh tokens), with Entra's paths under a fixed dev tenant. It issues the
 * same access tokens as `pushdrain dev-token`, so the app validates them exactly as any other.
 * Only loopback redirect URIs ending in /api/dashboard are accepted (the dev SPA registration).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

import { type CryptoKey, importJWK, SignJWT } from 'jose';

import { isRole, type Role, ROLES } from '../../shared/auth/principal';
import { API_SCOPE } from '../../shared/config/auth-settings';

/** The tenant segment of the local issuer's paths (Entra: the tenant id). */
export const DEV_TENANT_ID = '00000000-0000-0000-0000-0000000de7e0';

export interface SignInDeps {
  /** `https://127.0.0.1:{port}/{tenant}`: the authority MSAL is given. */
  authority: string;
  issuer: string;
  clientId: string;
  /** The API scope the status page asks for (`api://…/user_impersonation`). */
  scope: string;
  jwks: string;
  kid: string;
  privateJwk: Parameters<typeof importJWK>[0];
  /** Mints the access token (the same as `pushdrain dev-token`). */
  accessToken(name: string, roles: Role[], scope: string): Promise<string>;
  objectId(name: string): string;
  /** A person's pairwise `sub` for a client (never the object id: an ID token is no app token). */
  subject(name: string, clientId: string): string;
}

interface Grant {
  name: string;
  roles: Role[];
  clientId: string;
  redirectUri: string;
  challenge: string;
  nonce: string;
  scope: string;
  expires: number;
}

const CODE_TTL_MS = 5 * 60_000;
const MAX_GRANTS = 1000;
const OIDC_SCOPES = new Set(['openid', 'profile', 'offline_access', 'email']);

const b64url = (b: Buffer): string => b.toString('base64url');

/** A loopback page at /api/dashboard: the only redirect URIs the dev SPA registration has. */
function isDevRedirectUri(value: string): boolean {
  try {
    const u = new URL(value);
    return (
      (u.protocol === 'http:' || u.protocol === 'https:') &&
      (u.hostname === '127.0.0.1' || u.hostname === 'localhost') &&
      u.pathname.endsWith('/api/dashboard') &&
      u.search === '' &&
      u.hash === ''
    );
  } catch {
    return false;
  }
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > 64 * 1024) throw new Error('form too large');
    parts.push(part);
  }
  return new URLSearchParams(Buffer.concat(parts).toString('utf8'));
}

export class DevSignIn {
  private readonly codes = new Map<string, Grant>();
  private readonly refresh = new Map<string, Grant>();
  private signing: CryptoKey | undefined;

  constructor(private readonly d: SignInDeps) {}

  private get paths(): Record<string, string> {
    const t = `/${DEV_TENANT_ID}`;
    return {
      discovery: `${t}/v2.0/.well-known/openid-configuration`,
      authorize: `${t}/oauth2/v2.0/authorize`,
      token: `${t}/oauth2/v2.0/token`,
      logout: `${t}/oauth2/v2.0/logout`,
      keys: `${t}/discovery/v2.0/keys`,
    };
  }

  /** True when it answered the request (an OIDC path), false to let the issuer answer it. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const p = this.paths;
    const cors = corsHeaders(req);
    if (req.method === 'OPTIONS' && Object.values(p).includes(url.pathname)) {
      res.writeHead(204, { ...cors, 'Access-Control-Max-Age': '600' });
      res.end();
      return true;
    }
    if (req.method === 'GET' && url.pathname === p.discovery) {
      sendJson(res, 200, this.discovery(), cors);
      return true;
    }
    if (req.method === 'GET' && url.pathname === p.keys) {
      sendJson(res, 200, JSON.parse(this.d.jwks) as unknown, cors);
      return true;
    }
    if (url.pathname === p.authorize && req.method === 'GET') {
      this.loginForm(url.searchParams, res);
      return true;
    }
    if (url.pathname === p.authorize && req.method === 'POST') {
      this.approve(await readForm(req), res);
      return true;
    }
    if (url.pathname === p.token && req.method === 'POST') {
      await this.token(await readForm(req), res, cors);
      return true;
    }
    if (url.pathname === p.logout && req.method === 'GET') {
      const to = url.searchParams.get('post_logout_redirect_uri') ?? '';
      if (isDevRedirectUri(to)) res.writeHead(302, { Location: to }).end();
      else page(res, 200, '<p>Signed out.</p>');
      return true;
    }
    return false;
  }

  private discovery(): Record<string, unknown> {
    const base = new URL(this.d.authority).origin;
    const p = this.paths;
    return {
      issuer: this.d.issuer,
      authorization_endpoint: `${base}${p.authorize}`,
      token_endpoint: `${base}${p.token}`,
      end_session_endpoint: `${base}${p.logout}`,
      jwks_uri: `${base}${p.keys}`,
      response_types_supported: ['code'],
      response_modes_supported: ['query', 'fragment', 'form_post'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: ['openid', 'profile', 'offline_access', this.d.scope],
      subject_types_supported: ['pairwise'],
      id_token_signing_alg_values_supported: ['RS256'],
      token_endpoint_auth_methods_supported: ['none'],
      tenant_region_scope: null,
    };
  }

  /** What every authorize request must carry; a message when it does not (never a redirect then). */
  private checkRequest(q: URLSearchParams): string | undefined {
    if (q.get('client_id') !== this.d.clientId) return `unknown client_id (the dev status page is ${this.d.clientId})`;
    if (!isDevRedirectUri(q.get('redirect_uri') ?? '')) return 'redirect_uri must be a loopback page at /api/dashboard';
    if (q.get('response_type') !== 'code') return 'response_type must be code';
    if (q.get('code_challenge_method') !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(q.get('code_challenge') ?? ''))
      return 'PKCE is required: code_challenge with code_challenge_method=S256';
    return undefined;
  }

  private loginForm(q: URLSearchParams, res: ServerResponse): void {
    const problem = this.checkRequest(q);
    if (problem) return page(res, 400, `<p>Bad sign-in request: ${escapeHtml(problem)}</p>`);
    const hidden = [...q.entries()]
      .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
      .join('');
    const roles = ROLES.map((r) => `<label><input type="checkbox" name="dev_role" value="${r}"> ${r}</label><br>`).join(
      '',
    );
    const hint = escapeHtml(q.get('login_hint') ?? '');
    page(
      res,
      200,
      `<h1>pushdrain local issuer</h1><p>Sign in as any name with any roles (development only).</p>
<form method="post" id="dev-sign-in">${hidden}
<label>Name <input name="dev_name" id="dev-name" value="${hint}" required maxlength="64"></label><br>
${roles}<button type="submit" id="dev-approve">Sign in</button></form>`,
      new URL(q.get('redirect_uri') ?? '').origin,
    );
  }

  private approve(form: URLSearchParams, res: ServerResponse): void {
    const problem = this.checkRequest(form);
    if (problem) return page(res, 400, `<p>Bad sign-in request: ${escapeHtml(problem)}</p>`);
    const redirectUri = form.get('redirect_uri') ?? '';
    const name = (form.get('dev_name') ?? '').trim();
    const back = new URLSearchParams();
    const state = form.get('state');
    if (state !== null) back.set('state', state);
    if (!/^[A-Za-z0-9 ._-]{1,64}$/.test(name)) {
      back.set('error', 'access_denied');
      back.set('error_description', 'no valid name given');
    } else {
      const code = b64url(randomBytes(32));
      this.remember(this.codes, code, {
        name,
        roles: form.getAll('dev_role').filter(isRole),
        clientId: this.d.clientId,
        redirectUri,
        challenge: form.get('code_challenge') ?? '',
        nonce: form.get('nonce') ?? '',
        scope: form.get('scope') ?? '',
        expires: Date.now() + CODE_TTL_MS,
      });
      back.set('code', code);
      back.set('client_info', this.clientInfo(name));
    }
    const sep = form.get('response_mode') === 'query' ? '?' : '#';
    res.writeHead(302, { Location: `${redirectUri}${sep}${back.toString()}`, 'Cache-Control': 'no-store' });
    res.end();
  }

  private async token(form: URLSearchParams, res: ServerResponse, cors: Record<string, string>): Promise<void> {
    const fail = (error: string, description: string): void =>
      sendJson(res, 400, { error, error_description: description }, cors);
    if (form.get('client_id') !== this.d.clientId) return fail('invalid_client', 'unknown client_id');
    let grant: Grant | undefined;
    const type = form.get('grant_type');
    if (type === 'authorization_code') {
      const code = form.get('code') ?? '';
      grant = this.codes.get(code);
      this.codes.delete(code); // single use, whatever happens next
      if (!grant || grant.expires < Date.now()) return fail('invalid_grant', 'the code is unknown, used or expired');
      if (form.get('redirect_uri') !== grant.redirectUri) return fail('invalid_grant', 'redirect_uri does not match');
      const verifier = form.get('code_verifier') ?? '';
      if (b64url(createHash('sha256').update(verifier).digest()) !== grant.challenge)
        return fail('invalid_grant', 'the code_verifier does not match the code_challenge (PKCE)');
    } else if (type === 'refresh_token') {
      const rt = form.get('refresh_token') ?? '';
      grant = this.refresh.get(rt);
      this.refresh.delete(rt); // rotated
      if (!grant) return fail('invalid_grant', 'the refresh token is unknown or used');
    } else return fail('unsupported_grant_type', 'authorization_code or refresh_token');
    const requested = (form.get('scope') ?? grant.scope).split(' ').filter((s) => s !== '');
    const apiScopes = requested.filter((s) => !OIDC_SCOPES.has(s));
    if (apiScopes.some((s) => s !== this.d.scope && s !== `${this.d.scope.replace(/\/[^/]+$/, '')}/.default`))
      return fail('invalid_scope', `this issuer grants ${this.d.scope} only`);
    const scope = apiScopes.length > 0 ? this.d.scope : '';
    const refreshToken = b64url(randomBytes(32));
    this.remember(this.refresh, refreshToken, { ...grant, expires: Date.now() + 24 * 3600_000 });
    const lifetime = 3600;
    sendJson(
      res,
      200,
      {
        token_type: 'Bearer',
        scope: [scope, ...requested.filter((s) => OIDC_SCOPES.has(s))].filter(Boolean).join(' '),
        expires_in: lifetime,
        ext_expires_in: lifetime,
        ...(scope ? { access_token: await this.d.accessToken(grant.name, grant.roles, API_SCOPE) } : {}),
        refresh_token: refreshToken,
        id_token: await this.idToken(grant),
        client_info: this.clientInfo(grant.name),
      },
      { ...cors, 'Cache-Control': 'no-store' },
    );
  }

  private clientInfo(name: string): string {
    return b64url(Buffer.from(JSON.stringify({ uid: this.d.objectId(name), utid: DEV_TENANT_ID })));
  }

  private async idToken(g: Grant): Promise<string> {
    this.signing ??= (await importJWK(this.d.privateJwk, 'RS256')) as CryptoKey;
    const now = Math.floor(Date.now() / 1000);
    const oid = this.d.objectId(g.name);
    return new SignJWT({
      oid,
      tid: DEV_TENANT_ID,
      name: g.name,
      preferred_username: `${g.name.replace(/\s+/g, '.').toLowerCase()}@pushdrain.local`,
      ...(g.nonce ? { nonce: g.nonce } : {}),
      ver: '2.0',
    })
      .setProtectedHeader({ alg: 'RS256', kid: this.d.kid, typ: 'JWT' })
      .setIssuer(this.d.issuer)
      .setAudience(g.clientId)
      .setSubject(this.d.subject(g.name, g.clientId))
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + 3600)
      .sign(this.signing);
  }

  private remember(map: Map<string, Grant>, key: string, grant: Grant): void {
    map.set(key, grant);
    for (const [k, g] of map) if (map.size > MAX_GRANTS || g.expires < Date.now()) map.delete(k);
  }
}

/** The token and discovery endpoints are read by the page's script from another origin (as Entra's are). */
function corsHeaders(req: IncomingMessage): Record<string, string> {
  const origin = req.headers.origin ?? '';
  let loopback = false;
  try {
    const h = new URL(origin).hostname;
    loopback = h === '127.0.0.1' || h === 'localhost';
  } catch {
    loopback = false;
  }
  if (!loopback) return {};
  return {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Methods': 'GET, POST',
    'Access-Control-Allow-Headers': req.headers['access-control-request-headers'] ?? 'content-type',
    Vary: 'Origin',
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function page(res: ServerResponse, status: number, body: string, formTarget?: string): void {
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    // The form posts here, then redirects to the status page: form-action must allow both.
    'Content-Security-Policy': `default-src 'none'; form-action 'self'${formTarget ? ` ${formTarget}` : ''}; frame-ancestors 'none'`,
    'Cache-Control': 'no-store',
  });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>pushdrain local sign-in</title></head><body>${body}</body></html>`,
  );
}
