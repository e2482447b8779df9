/**
 * A refused caller: 401 (no valid access token: the body says why, the WWW-Authenticate header
 * names the scheme) or 403 (a valid token that may not do this: the role the route needs, the
 * API's scope, or an allowed calling app). Never a token's content beyond what the caller sent.
 */
import type { Role } from './principal';

/** RFC 6750's error codes for the WWW-Authenticate challenge. */
export type BearerChallenge = 'invalid_token' | 'insufficient_scope';

export class AccessError extends Error {
  override readonly name = 'AccessError';
  constructor(
    readonly status: 401 | 403,
    message: string,
    /** The roles of which the route needs one (a 403, and a 401 on a route that needs a role). */
    readonly requiredRoles: readonly Role[] = [],
    /** @defaultValue invalid_token on a 401, none on a 403 */
    readonly challenge: BearerChallenge | undefined = status === 401 ? 'invalid_token' : undefined,
  ) {
    super(message);
  }

  get code(): 'unauthorized' | 'forbidden' {
    return this.status === 401 ? 'unauthorized' : 'forbidden';
  }
}
