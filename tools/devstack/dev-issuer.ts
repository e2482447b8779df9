/**
 * The local token issuer of `npm start -- --auth entra`: an RS256 signing key kept in the data
 * folder (`.dev-issuer/signing-key.json`, mode 0600, never printed), its public half served as a
 * JWKS on 127.0.0.1, and tokens shaped like Entra's v2 access tokens (`oid`, `azp`, `name`,
 * `roles`). The app validates them with the same TokenVerifier it uses in Azure.
 */
import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { exportJWK, generateKeyPair, importJWK, type JWK, type KeyLike, SignJWT } from 'jose';

import type { Role } from '../../shared/auth/principal';

/** The audience of local tokens: what `--auth entra` configures the app to accept. */
export const DEV_AUDIENCE = 'api://pushdrain-dev';
/** The client app id local tokens carry in `azp`. */
export const DEV_CLIENT_APP_ID = '00000000-0000-0000-0000-00000000de00';

export interface DevIssuerInfo {
  issuer: string;
  audience: string;
  jwksUrl: string;
}

interface StoredKey {
  kid: string;
  privateJwk: JWK;
}

export function issuerDir(dataRoot: string): string {
  return join(dataRoot, '.dev-issuer');
}

/** The signing key of this data folder, made on first use; the file is readable by its owner only. */
export async function loadOrCreateKey(dataRoot: string): Promise<StoredKey> {
  const dir = issuerDir(dataRoot);
  const file = join(dir, 'signing-key.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as StoredKey;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const stored: StoredKey = { kid: randomUUID(), privateJwk: await exportJWK(privateKey) };
  writeFileSync(file, JSON.stringify(stored), { mode: 0o600 });
  chmodSync(file, 0o600);
  return stored;
}

function publicJwk(key: StoredKey): JWK {
  const { kty, n, e } = key.privateJwk;
  return { kty, n, e, kid: key.kid, alg: 'RS256', use: 'sig' };
}

export interface DevIssuer extends DevIssuerInfo {
  close(): Promise<void>;
}

/** Serves the JWKS at `/discovery/v2.0/keys` (Entra's path) and writes where it is for `dev-token`. */
export async function startDevIssuer(dataRoot: string, port = 0): Promise<DevIssuer> {
  const key = await loadOrCreateKey(dataRoot);
  const jwks = JSON.stringify({ keys: [publicJwk(key)] });
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/discovery/v2.0/keys') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=300' });
      res.end(jwks);
      return;
    }
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end('{"error":"not_found"}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const info: DevIssuerInfo = {
    issuer: `${base}/v2.0`,
    audience: DEV_AUDIENCE,
    jwksUrl: `${base}/discovery/v2.0/keys`,
  };
  writeFileSync(join(issuerDir(dataRoot), 'issuer.json'), JSON.stringify(info));
  return {
    ...info,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Where the running issuer of this data folder is; undefined when none was started. */
export function readIssuerInfo(dataRoot: string): DevIssuerInfo | undefined {
  const file = join(issuerDir(dataRoot), 'issuer.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DevIssuerInfo) : undefined;
}

/** The app settings that make the app accept this issuer's tokens. */
export function issuerSettings(info: DevIssuerInfo): Record<string, string> {
  return {
    PUSHDRAIN_AUTH_ISSUER: info.issuer,
    PUSHDRAIN_AUTH_AUDIENCE: info.audience,
    PUSHDRAIN_AUTH_JWKS_URL: info.jwksUrl,
  };
}

export interface DevTokenRequest {
  roles: readonly Role[];
  /** A person's name: the same name always gets the same object id, so "alice" finds alice's batches. */
  name: string;
  /** A service principal instead of a person: no `name` claim, `idtyp: app`. */
  app?: boolean;
  /** @defaultValue 3600 */
  lifetimeSeconds?: number;
  /** @defaultValue DEV_AUDIENCE */
  audience?: string;
}

/** A stable object id for a name (a UUID made from its hash). */
export function devObjectId(name: string): string {
  const h = createHash('sha256').update(`pushdrain-dev:${name}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export async function mintDevToken(key: StoredKey, issuer: string, r: DevTokenRequest): Promise<string> {
  const signing = (await importJWK(key.privateJwk, 'RS256')) as KeyLike;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    oid: devObjectId(r.name),
    azp: DEV_CLIENT_APP_ID,
    roles: [...r.roles],
    ...(r.app ? { idtyp: 'app' } : { name: r.name }),
  })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(r.audience ?? DEV_AUDIENCE)
    .setSubject(devObjectId(r.name))
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + (r.lifetimeSeconds ?? 3600))
    .sign(signing);
}
