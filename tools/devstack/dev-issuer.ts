/**
 * The local token issuer of `npm start -- --auth entra`: an RS256 signing key kept in the data
 * folder (`.dev-issuer/signing-key.json`, mode 0600, never printed), its public half served as a
 * JWKS on 127.0.0.1, and tokens shaped like Entra's v2 access tokens (`oid`, `sub`, `azp`, `name`,
 * `roles`, and a person's `scp` or an app's `idtyp`). The app validates them with the same
 * TokenVerifier it uses in Azure.
 *
 * One port speaks both plain http (the JWKS the app fetches: the app trusts no private CA) and
 * https with a self-signed certificate (the issuer itself and its OpenID Connect endpoints,
 * dev-sign-in.ts, which MSAL reaches only over https); the first byte of a connection tells which.
 */
import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { join } from 'node:path';

import { type CryptoKey, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';

import type { Role } from '../../shared/auth/principal';
import { API_SCOPE } from '../../shared/config/auth-settings';
import { DEV_TENANT_ID, DevSignIn } from './dev-sign-in';
import { makeSelfSigned, type SelfSigned } from './self-signed-cert';

/** The audience of local tokens: what `--auth entra` configures the app to accept. */
const DEV_AUDIENCE = 'api://pushdrain-dev';
/** The client app id local tokens carry in `azp`. */
export const DEV_CLIENT_APP_ID = '00000000-0000-0000-0000-00000000de00';

/** The delegated scope the status page asks for (Entra: the hook's `user_impersonation`). */
const DEV_SCOPE = `${DEV_AUDIENCE}/${API_SCOPE}`;

export interface DevIssuerInfo {
  /** `https://127.0.0.1:{port}/{tenant}/v2.0`, Entra's shape. */
  issuer: string;
  audience: string;
  /** Plain http on 127.0.0.1 (what the app fetches). */
  jwksUrl: string;
  /** The status page's client id (the dev SPA registration). */
  clientId?: string;
  /** The scope the status page asks for. */
  scope?: string;
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

/** The TLS certificate of this data folder, made again when it is about to expire. */
function loadOrCreateTls(dataRoot: string): SelfSigned {
  const file = join(issuerDir(dataRoot), 'tls.json');
  if (existsSync(file)) {
    const stored = JSON.parse(readFileSync(file, 'utf8')) as SelfSigned;
    if (stored.notAfter > Date.now() + 24 * 3600_000) return stored;
  }
  const made = makeSelfSigned();
  writeFileSync(file, JSON.stringify(made), { mode: 0o600 });
  chmodSync(file, 0o600);
  return made;
}

/**
 * Serves the JWKS at `/{tenant}/discovery/v2.0/keys` (Entra's path; `/discovery/v2.0/keys` too),
 * the OpenID Connect endpoints, and writes where it is for `dev-token`.
 */
export async function startDevIssuer(dataRoot: string, port = 0): Promise<DevIssuer> {
  const key = await loadOrCreateKey(dataRoot);
  const tls = loadOrCreateTls(dataRoot);
  const jwks = JSON.stringify({ keys: [publicJwk(key)] });
  // Made once the port is known (its URLs name it); until then only the JWKS is served.
  const oidc: { signIn?: DevSignIn } = {};
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    void (async () => {
      if (await oidc.signIn?.handle(req, res)) return;
      if (
        req.method === 'GET' &&
        (req.url === '/discovery/v2.0/keys' || req.url === `/${DEV_TENANT_ID}/discovery/v2.0/keys`)
      ) {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=300' });
        res.end(jwks);
        return;
      }
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"error":"not_found"}');
    })().catch(() => {
      if (!res.headersSent) res.writeHead(400, { 'Content-Type': 'application/json' });
      res.end('{"error":"invalid_request"}');
    });
  };
  const plain: Server = createServer(handler);
  const secure = createHttpsServer({ key: tls.key, cert: tls.cert }, handler);
  const sockets = new Set<Socket>();
  // A TLS connection opens with a handshake record (0x16); anything else is plain HTTP.
  const front = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.once('readable', function sniff() {
      const first = socket.read(1) as Buffer | null;
      if (first === null) return void socket.once('readable', sniff);
      socket.unshift(first);
      (first[0] === 0x16 ? secure : plain).emit('connection', socket);
    });
  });
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(port, '127.0.0.1', () => resolve());
  });
  const hostPort = `127.0.0.1:${(front.address() as AddressInfo).port}`;
  const authority = `https://${hostPort}/${DEV_TENANT_ID}`;
  const info: DevIssuerInfo = {
    issuer: `${authority}/v2.0`,
    audience: DEV_AUDIENCE,
    jwksUrl: `http://${hostPort}/${DEV_TENANT_ID}/discovery/v2.0/keys`,
    clientId: DEV_CLIENT_APP_ID,
    scope: DEV_SCOPE,
  };
  oidc.signIn = new DevSignIn({
    authority,
    issuer: info.issuer,
    clientId: DEV_CLIENT_APP_ID,
    scope: DEV_SCOPE,
    jwks,
    kid: key.kid,
    privateJwk: key.privateJwk,
    accessToken: (name, roles, scp) => mintDevToken(key, info.issuer, { name, roles, scope: scp }),
    objectId: devObjectId,
    subject: devPairwiseSubject,
  });
  writeFileSync(join(issuerDir(dataRoot), 'issuer.json'), JSON.stringify(info));
  return {
    ...info,
    close: () =>
      new Promise<void>((resolve) => {
        front.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** Where the running issuer of this data folder is; undefined when none was started. */
export function readIssuerInfo(dataRoot: string): DevIssuerInfo | undefined {
  const file = join(issuerDir(dataRoot), 'issuer.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DevIssuerInfo) : undefined;
}

/**
 * The app settings that make the app accept this issuer's tokens. The audiences are those of an
 * Entra registration (its app id and its `api://` URI): the status page then signs in as that
 * same app, exactly as infra's settings make it do in Azure.
 */
export function issuerSettings(info: DevIssuerInfo): Record<string, string> {
  return {
    PUSHDRAIN_AUTH_ISSUER: info.issuer,
    PUSHDRAIN_AUTH_AUDIENCE: [info.audience, ...(info.clientId ? [info.clientId] : [])].join(','),
    PUSHDRAIN_AUTH_JWKS_URL: info.jwksUrl,
  };
}

export interface DevTokenRequest {
  roles: readonly Role[];
  /** A person's name: the same name always gets the same object id, so "alice" finds alice's batches. */
  name: string;
  /** A service principal instead of a person: no `name` and no `scp`; `idtyp: app`, `sub` = `oid`. */
  app?: boolean;
  /** @defaultValue 3600 */
  lifetimeSeconds?: number;
  /** @defaultValue DEV_AUDIENCE */
  audience?: string;
  /**
   * A person's delegated scopes (`scp`, space-separated names), as Entra issues them to a client app.
   * @defaultValue API_SCOPE (`user_impersonation`); an app's token carries none
   */
  scope?: string;
}

const uuidOf = (h: string): string =>
  `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;

/** A stable object id for a name (a UUID made from its hash). */
function devObjectId(name: string): string {
  return uuidOf(createHash('sha256').update(`pushdrain-dev:${name}`).digest('hex'));
}

/**
 * A person's `sub`: pairwise, as Entra's (per person and app, never the object id), so that only an
 * app token has `sub` equal to `oid`.
 */
function devPairwiseSubject(name: string, clientId: string): string {
  return createHash('sha256').update(`pushdrain-dev-sub:${clientId}:${name}`).digest('base64url').slice(0, 43);
}

export async function mintDevToken(key: StoredKey, issuer: string, r: DevTokenRequest): Promise<string> {
  const signing = (await importJWK(key.privateJwk, 'RS256')) as CryptoKey;
  const now = Math.floor(Date.now() / 1000);
  const oid = devObjectId(r.name);
  return new SignJWT({
    oid,
    azp: DEV_CLIENT_APP_ID,
    roles: [...r.roles],
    tid: DEV_TENANT_ID,
    ver: '2.0',
    ...(r.app ? { idtyp: 'app' } : { name: r.name, scp: r.scope ?? API_SCOPE }),
  })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(r.audience ?? DEV_AUDIENCE)
    .setSubject(r.app ? oid : devPairwiseSubject(r.name, DEV_CLIENT_APP_ID))
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + (r.lifetimeSeconds ?? 3600))
    .sign(signing);
}
