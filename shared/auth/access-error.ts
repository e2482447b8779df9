/**
 * A refused caller: 401 (no valid token: the body says why, the WWW-Authenticate header names
 * the scheme) or 403 (a valid token without the role the route needs: the body names the roles).
 * Never a token's content beyond what the caller sent.
 */
import type { Role } from './principal';

export class AccessError extends Error {
  override readonly name = 'AccessError';
  constructor(
    readonly status: 401 | 403,
    message: string,
    /** The roles of which the route needs one (a 403, and a 401 on a route that needs a role). */
    readonly requiredRoles: readonly Role[] = [],
  ) {
    super(message);
  }

  get code(): 'unauthorized' | 'forbidden' {
    return this.status === 401 ? 'unauthorized' : 'forbidden';
  }
}
