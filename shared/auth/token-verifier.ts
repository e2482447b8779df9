/**
 * Validates an Entra ID access token with `jose`: RS256 signature by a key of the issuer's JWKS
 * (fetched once per instance, refetched at most every 30 s when a token names a key it has not
 * seen: how key rollover arrives), the issuer, one of the audiences, the expiry (60 s of clock
 * skew) and an object id; then that it is an access token of the right kind (token-kind.ts). The
 * same code validates the local issuer's tokens under `npm start`.
 */
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from 'jose';

import type { TokenSettings } from '../config/auth-settings';
import { AccessError } from './access-error';
import { isRole, type Principal, printable, type Role } from './principal';
import { tokenKind } from './token-kind';

/** jose gives up on a JWKS fetch after this long; the caller then gets a 401 and may retry. */
const JWKS_TIMEOUT_MS = 5000;

type KeySource = Parameters<typeof jwtVerify>[1];

export class TokenVerifier {
  private readonly keys: KeySource;

  constructor(
    private readonly settings: TokenSettings,
    keys?: KeySource,
  ) {
    this.keys = keys ?? createRemoteJWKSet(new URL(settings.jwksUrl), { timeoutDuration: JWKS_TIMEOUT_MS });
  }

  /** The principal a bearer token stands for; an AccessError(401) that says why when it is not valid. */
  async verify(token: string): Promise<Principal> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: this.settings.issuer,
        audience: this.settings.audiences,
        algorithms: ['RS256'],
        clockTolerance: 60,
        requiredClaims: ['exp', 'oid'],
      }));
    } catch (e) {
      throw new AccessError(401, `the bearer token is not valid: ${reason(e)}`);
    }
    const oid = payload.oid;
    if (typeof oid !== 'string' || !/^[A-Za-z0-9-]{1,64}$/.test(oid))
      throw new AccessError(401, 'the bearer token is not valid: its oid claim is not an object id');
    const kind = tokenKind(payload, this.settings);
    // Claims end up in manifests and log lines: no control character reaches them.
    const appId = printable(firstString(payload.azp, payload.appid) ?? '', 64);
    const name = printable(firstString(payload.name) ?? '');
    const roles = Array.isArray(payload.roles) ? payload.roles.filter(isRole) : [];
    return {
      kind: 'token',
      submitter: { objectId: oid, ...(appId ? { appId } : {}), ...(name ? { name } : {}) },
      roles: new Set<Role>(roles),
      tokenKind: kind,
    };
  }
}

function firstString(...values: unknown[]): string | undefined {
  return values.find((v): v is string => typeof v === 'string' && v !== '');
}

/** A short reason in our words (jose's messages can quote claim values). */
function reason(e: unknown): string {
  if (e instanceof errors.JWTExpired) return 'it has expired';
  if (e instanceof errors.JWTClaimValidationFailed) return `its ${e.claim} claim is not accepted here`;
  if (e instanceof errors.JWKSNoMatchingKey) return 'it is not signed by a key of the issuer';
  if (e instanceof errors.JWSSignatureVerificationFailed) return 'its signature does not verify';
  if (e instanceof errors.JOSEAlgNotAllowed) return 'its algorithm is not allowed (RS256 only)';
  if (e instanceof errors.JWKSTimeout) return "the issuer's signing keys could not be fetched in time; retry";
  if (e instanceof errors.JOSEError) return `it is malformed (${e.code})`;
  return 'it could not be checked';
}
