/**
 * The check every data route makes first: who calls (a bearer token, or in `keys`/`both` mode a
 * function key the platform already checked) and whether it holds one of the route's roles.
 * `X-MS-CLIENT-PRINCIPAL` is never read: without App Service Authentication anybody can send it.
 * In `both` every caller holds a key (the platform asks for one), so a token client could drop its
 * token: a key holder gets PUSHDRAIN_AUTH_KEY_ROLES, not its token's roles.
 */
import type { AuthSettings } from '../config/auth-settings';
import { AccessError } from './access-error';
import { holdsAny, keyHolder, type Principal, type Role } from './principal';
import { TokenVerifier } from './token-verifier';

export class Access {
  private readonly verifier: TokenVerifier | undefined;

  constructor(
    private readonly settings: AuthSettings,
    verifier?: TokenVerifier,
  ) {
    this.verifier = verifier ?? (settings.tokens ? new TokenVerifier(settings.tokens) : undefined);
  }

  /** The caller, if it holds one of `anyOf`; otherwise an AccessError (401 or 403) naming the roles. */
  async authorize(authorization: string | null | undefined, anyOf: readonly Role[]): Promise<Principal> {
    const principal = await this.authenticate(authorization, anyOf);
    if (!holdsAny(principal, anyOf))
      throw new AccessError(
        403,
        `this needs the app role ${anyOf.join(' or ')}; the token has ${[...principal.roles].join(', ') || 'no role of this API'}`,
        anyOf,
      );
    return principal;
  }

  private async authenticate(authorization: string | null | undefined, anyOf: readonly Role[]): Promise<Principal> {
    const header = authorization?.trim() ?? '';
    if (this.settings.mode === 'keys' || !this.verifier) return keyHolder(this.settings.keyRoles);
    if (header === '') {
      // `both`: the platform required a function key to let this request in.
      if (this.settings.mode === 'both' && this.settings.keyRoles.size > 0) return keyHolder(this.settings.keyRoles);
      throw new AccessError(401, `a bearer token is required (app role ${anyOf.join(' or ')})`, anyOf);
    }
    const m = /^Bearer\s+([A-Za-z0-9._~+/=-]+)$/i.exec(header);
    if (!m?.[1]) throw new AccessError(401, 'the Authorization header must be "Bearer <token>"', anyOf);
    return this.verifier.verify(m[1]);
  }
}
