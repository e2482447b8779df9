/**
 * Which kind of Entra token a verified JWT is, and whether it is an access token this API takes.
 * Signature, issuer, audience and expiry say who issued it and for whom; they do not tell an access
 * token from an ID token (both name this registration as their audience when the status page
 * signs in as it), nor a user's token from an app's. Microsoft's access token claims decide:
 *
 * - `nonce` is an ID token's (OpenID Connect puts it there; access tokens carry none): refused.
 * - `idtyp` (an optional claim the hook configures) is `app` or `user`; anything else is refused.
 * - A user's (delegated) token carries the scopes the user consented to in `scp`: it must hold this
 *   API's scope, else any app the user consented to would act with all of the user's roles.
 * - An app's token carries no `scp`; it is marked `idtyp=app`, or, where the optional claim is not
 *   issued, has `oid` equal to `sub` (Microsoft's documented equivalent: a user's `sub` is pairwise).
 *   A token with neither `scp` nor either mark is an ID token or some other token: refused.
 * - With an allowlist, the calling app (`azp`, v1 `appid`) must be on it.
 *
 * Reasons name claims, never their values: the caller sent the token and can read it itself.
 */
import type { JWTPayload } from 'jose';

import { API_SCOPE, type TokenSettings } from '../config/auth-settings';
import { AccessError } from './access-error';

export type TokenKind = 'delegated' | 'app';

const notAccess = (why: string): AccessError =>
  new AccessError(401, `the bearer token is not an access token for this API: ${why}`);

/** The kind of a verified token; an AccessError when it is not an access token this API accepts. */
export function tokenKind(payload: JWTPayload, settings: Pick<TokenSettings, 'clientApps'>): TokenKind {
  if (payload.nonce !== undefined) throw notAccess('it carries a nonce, as an ID token does');
  const idtyp = payload.idtyp;
  if (idtyp !== undefined && idtyp !== 'app' && idtyp !== 'user')
    throw notAccess('its idtyp claim is neither app nor user');
  const kind = delegatedOrApp(payload, idtyp);
  if (settings.clientApps) {
    const caller = typeof payload.azp === 'string' ? payload.azp : payload.appid;
    if (typeof caller !== 'string' || !settings.clientApps.includes(caller.toLowerCase()))
      throw new AccessError(403, 'the calling application is not one this API accepts (PUSHDRAIN_AUTH_CLIENT_APPS)');
  }
  return kind;
}

function delegatedOrApp(payload: JWTPayload, idtyp: unknown): TokenKind {
  if (payload.scp !== undefined) {
    if (idtyp === 'app') throw notAccess('an app token (idtyp app) carries no delegated scopes (scp)');
    const scopes = typeof payload.scp === 'string' ? payload.scp.split(' ') : [];
    if (!scopes.includes(API_SCOPE))
      throw new AccessError(
        403,
        `the token does not carry this API's delegated scope ${API_SCOPE}: ask for api://<app id>/${API_SCOPE}`,
        [],
        'insufficient_scope',
      );
    return 'delegated';
  }
  if (idtyp === 'user') throw notAccess('a user token (idtyp user) without delegated scopes (scp)');
  if (idtyp === 'app') return 'app';
  if (typeof payload.sub === 'string' && payload.sub === payload.oid) return 'app';
  throw notAccess('it has no delegated scopes (scp) and is not an app token (idtyp app, or oid equal to sub)');
}
