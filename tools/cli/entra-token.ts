/**
 * `--auth entra`: where the CLI's access token comes from. A token given as it is (`--token`,
 * PUSHDRAIN_TOKEN: a dev token locally), otherwise @azure/identity for the API's scope:
 * DefaultAzureCredential (client credentials from AZURE_CLIENT_ID/AZURE_CLIENT_SECRET/
 * AZURE_TENANT_ID or a certificate for services, a managed identity, `az login` for people), or
 * the device code flow with `--device-code`.
 */
import { DefaultAzureCredential, DeviceCodeCredential, type TokenCredential } from '@azure/identity';

import { CliError } from './client';
import { EXIT } from './exit-codes';

export interface EntraOptions {
  token?: string;
  /** e.g. `api://pushdrain-prod/.default` */
  scope?: string;
  deviceCode?: boolean;
  tenant?: string;
}

/** A function that returns a current token for each request. */
export function bearerSource(o: EntraOptions, say: (line: string) => void): () => Promise<string> {
  if (o.token) {
    const token = o.token.trim();
    return () => Promise.resolve(token);
  }
  if (!o.scope)
    throw new CliError(
      '--auth entra needs --scope (or PUSHDRAIN_API_SCOPE), e.g. api://pushdrain-<env>/.default; or --token',
      EXIT.usage,
    );
  const scope = o.scope;
  const credential: TokenCredential = o.deviceCode
    ? new DeviceCodeCredential({
        ...(o.tenant ? { tenantId: o.tenant } : {}),
        userPromptCallback: (info) => say(info.message),
      })
    : new DefaultAzureCredential(o.tenant ? { tenantId: o.tenant } : {});
  return async () => {
    try {
      const got = await credential.getToken(scope);
      if (!got) throw new Error('no token was returned');
      return got.token;
    } catch (e) {
      throw new CliError(`could not get a token for ${scope}: ${(e as Error).message}`, EXIT.auth);
    }
  };
}

/** Who a token acts as, from its claims (not verified here: the app does that). Never the token itself. */
export function describeToken(token: string): string {
  const payload = token.split('.')[1];
  let claims: Record<string, unknown> = {};
  try {
    claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return 'acting as: (the token is not a JWT the CLI can read)';
  }
  const str = (k: string): string | undefined => (typeof claims[k] === 'string' ? claims[k] : undefined);
  const roles = Array.isArray(claims.roles) ? (claims.roles as unknown[]).filter((r) => typeof r === 'string') : [];
  const exp = typeof claims.exp === 'number' ? new Date(claims.exp * 1000).toISOString() : 'unknown';
  const who = str('name') ?? str('upn') ?? (str('idtyp') === 'app' ? 'a service principal' : 'unnamed');
  return `acting as ${who} (oid ${str('oid') ?? '?'}, app ${str('azp') ?? str('appid') ?? '?'}), roles: ${roles.join(', ') || 'none'}, audience ${String(claims.aud)}, expires ${exp}`;
}
