/**
 * Who may call the HTTP routes: PUSHDRAIN_AUTH (`keys`, `entra` or `both`) and, for tokens, the
 * issuer, the audiences and the JWKS the app validates them against, the calling apps it accepts,
 * and in `both` what a key holder may do (docs/DESIGN.md, "Who may do what"). Read through
 * settings.ts; the registrations read the mode alone at module load.
 */
import { z } from 'zod';

import { isRole, type Role, ROLES } from '../auth/principal';
import { ConfigError } from '../errors';
import type { Env } from './connections';

export type AuthMode = 'keys' | 'entra' | 'both';

export interface TokenSettings {
  /** The `iss` every token must carry, e.g. `https://login.microsoftonline.com/{tenant}/v2.0`. */
  issuer: string;
  /** Accepted `aud` values: the API's app id, its `api://` URI. */
  audiences: string[];
  /** Where the signing keys are, e.g. `https://login.microsoftonline.com/{tenant}/discovery/v2.0/keys`. */
  jwksUrl: string;
  /**
   * The client apps (`azp`, or `appid` in v1 tokens) allowed to call; undefined lets any app the
   * tenant issued a token to call (app role assignments still decide what it may do).
   * @defaultValue undefined
   */
  clientApps?: readonly string[] | undefined;
}

/** The delegated scope the registration exposes (infra/hooks/entra-app.mjs): a user's token must carry it in `scp`. */
export const API_SCOPE = 'user_impersonation';

/**
 * How the status page signs a person in with MSAL (authorization code flow with PKCE). None of it
 * is secret: the page is served with it.
 */
export interface SignInSettings {
  /** The status page's client id: a SPA registration whose redirect URI is …/api/dashboard. */
  clientId: string;
  /** The issuer without its `/v2.0`: `https://login.microsoftonline.com/{tenant}`. */
  authority: string;
  /** The API scope the page asks a token for. */
  scopes: string[];
  /** The authority's host: trusted as it is, without Entra's instance discovery (the local issuer needs it). */
  knownAuthorities: string[];
}

export interface AuthSettings {
  /** @defaultValue 'keys' (infra sets 'entra') */
  mode: AuthMode;
  /** Set whenever the mode accepts tokens (`entra`, `both`). */
  tokens: TokenSettings | undefined;
  /** MSAL sign-in on the status page; undefined when there is no https issuer, client id or scope. */
  signIn?: SignInSettings | undefined;
  /**
   * The roles of a caller the platform let in with a function key and no token: every role in
   * `keys` (the key level is the only gate), PUSHDRAIN_AUTH_KEY_ROLES in `both`.
   * @defaultValue none in `both`: every token client holds a key too, so a key grants nothing unless the operator says so
   */
  keyRoles: ReadonlySet<Role>;
}

const AUTH_MODE = 'PUSHDRAIN_AUTH';
const AUTH_ISSUER = 'PUSHDRAIN_AUTH_ISSUER';
const AUTH_AUDIENCE = 'PUSHDRAIN_AUTH_AUDIENCE';
const AUTH_JWKS_URL = 'PUSHDRAIN_AUTH_JWKS_URL';
const AUTH_CLIENT_APPS = 'PUSHDRAIN_AUTH_CLIENT_APPS';
const AUTH_KEY_ROLES = 'PUSHDRAIN_AUTH_KEY_ROLES';

const APP_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A comma-separated list; blank entries dropped. */
const list = z.string().transform((raw) =>
  raw
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== ''),
);

/** App ids (GUIDs), lower-cased as Entra writes them; unset or blank means no allowlist. */
const clientAppsSchema = list.pipe(
  z
    .array(z.string().regex(APP_ID, { error: 'must be a comma-separated list of application (client) ids' }))
    .transform((ids) => (ids.length > 0 ? ids.map((id) => id.toLowerCase()) : undefined)),
);

/** Role names, or `none`: a key holder without a token then gets no role (a token is required). */
const keyRolesSchema = list.pipe(
  z
    .array(z.string())
    .refine((v) => v.length > 0, { error: `must name roles (${ROLES.join(', ')}) or none` })
    .refine((v) => (v.length === 1 && v[0] === 'none') || v.every(isRole), {
      error: `must be a comma-separated list of ${ROLES.join(', ')}, or none`,
    })
    .transform((v) => new Set<Role>(v.filter(isRole))),
);

function parseSetting<T>(schema: z.ZodType<T>, env: Env, setting: string, fallback: T): T {
  const raw = env[setting];
  if (raw === undefined || raw.trim() === '') return fallback;
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw new ConfigError(setting, parsed.error.issues[0]?.message ?? 'is invalid');
}

/** The mode alone (trigger registration needs only it). */
export function authMode(env: Env = process.env): AuthMode {
  const raw = env[AUTH_MODE]?.trim().toLowerCase() ?? '';
  if (raw === '') return 'keys';
  if (raw === 'keys' || raw === 'entra' || raw === 'both') return raw;
  throw new ConfigError(AUTH_MODE, `must be keys, entra or both, got "${env[AUTH_MODE]}"`);
}

function required(env: Env, setting: string, mode: AuthMode): string {
  const v = env[setting]?.trim() ?? '';
  if (v === '') throw new ConfigError(setting, `is required with ${AUTH_MODE}=${mode}`);
  return v;
}

/** Keys travel over https only; plain http is for the local issuer on the loopback interface. */
function jwksUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(AUTH_JWKS_URL, 'must be an absolute URL');
  }
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw new ConfigError(AUTH_JWKS_URL, 'must be https (plain http only on 127.0.0.1, for the local issuer)');
  return url.toString();
}

export function authSettings(env: Env): AuthSettings {
  const mode = authMode(env);
  const everyRole: ReadonlySet<Role> = new Set(ROLES);
  if (mode === 'keys') return { mode, tokens: undefined, keyRoles: everyRole };
  const audiences = required(env, AUTH_AUDIENCE, mode)
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  const tokens = {
    issuer: required(env, AUTH_ISSUER, mode),
    audiences,
    jwksUrl: jwksUrl(required(env, AUTH_JWKS_URL, mode)),
    clientApps: parseSetting(clientAppsSchema, env, AUTH_CLIENT_APPS, undefined),
  };
  // In Azure an empty allowlist is refused: any app a user consented to would act with that user's
  // roles. Locally (no WEBSITE_SITE_NAME, which App Service sets) the local issuer's tokens pass.
  if (!tokens.clientApps && (env.WEBSITE_SITE_NAME ?? '') !== '')
    throw new ConfigError(
      AUTH_CLIENT_APPS,
      `is required in Azure with ${AUTH_MODE}=${mode}: the client app ids that may call (the azd hook sets it to the apps it registers)`,
    );
  // Validated in `entra` too (infra sets it in both modes, and a switch to `both` must not meet a bad
  // value first); used in `both` only: in `entra` every route needs a token, there is no key holder.
  // Unset gives no role: in `both` every client holds a key, so a key with roles lets any of them drop
  // its token and act as an operator.
  const keyHolderRoles = parseSetting(keyRolesSchema, env, AUTH_KEY_ROLES, new Set<Role>());
  const keyRoles = mode === 'both' ? keyHolderRoles : new Set<Role>();
  return { mode, tokens, signIn: signInSettings(tokens), keyRoles };
}

/**
 * Derived from the token settings, as the page signs in as the API's own registration: the client id
 * is the audience that is an app id, the scope `user_impersonation` of the `api://` audience, the
 * authority the issuer without `/v2.0`. MSAL takes an https authority only.
 */
function signInSettings(tokens: TokenSettings): SignInSettings | undefined {
  const clientId = tokens.audiences.find((a) => APP_ID.test(a));
  const apiUri = tokens.audiences.find((a) => a.startsWith('api://'));
  const scope = apiUri ? `${apiUri}/${API_SCOPE}` : undefined;
  let authority: URL;
  try {
    authority = new URL(tokens.issuer.replace(/\/v2\.0\/?$/, ''));
  } catch {
    return undefined;
  }
  if (!clientId || !scope || authority.protocol !== 'https:') return undefined;
  return {
    clientId,
    authority: authority.toString().replace(/\/$/, ''),
    scopes: [scope],
    knownAuthorities: [authority.host],
  };
}
