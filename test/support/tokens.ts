/**
 * Tokens for the access tests, from the local issuer (tools/devstack/dev-issuer.ts) on a fresh
 * data folder, and the bad ones a matrix needs: expired, another audience, an unknown signing
 * key, `alg: none`, a forged X-MS-CLIENT-PRINCIPAL, and tokens of the issuer with claims changed
 * (an ID token's shape, a wrong `idtyp`, …).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { decodeJwt, exportJWK, generateKeyPair, importJWK, type JWTPayload, SignJWT } from 'jose';

import type { Role } from '../../shared/auth/principal';
import {
  type DevIssuer,
  type DevTokenRequest,
  issuerSettings,
  loadOrCreateKey,
  mintDevToken,
  startDevIssuer,
} from '../../tools/devstack/dev-issuer';

export interface TestIssuer {
  issuer: DevIssuer;
  /** The data folder holding its key (PUSHDRAIN_DATA_DIR for `pushdrain dev-token`). */
  dataDir: string;
  /** PUSHDRAIN_AUTH=entra and the issuer's settings. */
  env: Record<string, string>;
  token(
    name: string,
    roles: readonly Role[],
    extra?: Partial<Pick<DevTokenRequest, 'lifetimeSeconds' | 'audience' | 'app' | 'scope'>>,
  ): Promise<string>;
  /**
   * A token of the issuer's key whose claims are those of `token(name, roles, extra)` with `set`
   * added or replaced and `drop` removed: a token Entra could issue, or one it never should.
   */
  crafted(
    base: { name: string; roles: readonly Role[]; app?: boolean },
    change: { set?: JWTPayload; drop?: readonly string[] },
  ): Promise<string>;
  /** Signed by a key the issuer never published (same kid). */
  foreignKeyToken(name: string, roles: readonly Role[]): Promise<string>;
  close(): Promise<void>;
}

export async function testIssuer(mode: 'entra' | 'both' = 'entra'): Promise<TestIssuer> {
  const dir = mkdtempSync(join(tmpdir(), 'pushdrain-issuer-'));
  const issuer = await startDevIssuer(dir);
  const key = await loadOrCreateKey(dir);
  return {
    issuer,
    dataDir: dir,
    env: { PUSHDRAIN_AUTH: mode, ...issuerSettings(issuer) },
    token: (name, roles, extra = {}) => mintDevToken(key, issuer.issuer, { name, roles, ...extra }),
    crafted: async (base, change) => {
      const claims = decodeJwt(
        await mintDevToken(key, issuer.issuer, {
          name: base.name,
          roles: base.roles,
          ...(base.app ? { app: true } : {}),
        }),
      );
      for (const c of change.drop ?? []) delete claims[c];
      const signing = await importJWK(key.privateJwk, 'RS256');
      return new SignJWT({ ...claims, ...change.set })
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
        .sign(signing);
    },
    foreignKeyToken: async (name, roles) => {
      const { privateKey } = await generateKeyPair('RS256', { extractable: true });
      return mintDevToken({ kid: key.kid, privateJwk: await exportJWK(privateKey) }, issuer.issuer, { name, roles });
    },
    close: async () => {
      await issuer.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

/** An unsigned token (`alg: none`) claiming every role. */
export function algNoneToken(issuer: string, audience: string): string {
  const now = Math.floor(Date.now() / 1000);
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64({
    iss: issuer,
    aud: audience,
    oid: '11111111-1111-1111-1111-111111111111',
    roles: ['Batches.Submit', 'Batches.Read', 'Operations.Admin'],
    iat: now,
    exp: now + 3600,
  })}.`;
}

/** What App Service Authentication would inject, claiming every role: anybody can send it. */
export function forgedClientPrincipal(): string {
  return Buffer.from(
    JSON.stringify({
      auth_typ: 'aad',
      name_typ: 'name',
      role_typ: 'roles',
      claims: [
        { typ: 'http://schemas.microsoft.com/identity/claims/objectidentifier', val: 'forged' },
        { typ: 'roles', val: 'Batches.Read' },
        { typ: 'roles', val: 'Operations.Admin' },
        { typ: 'roles', val: 'Batches.Submit' },
      ],
    }),
  ).toString('base64');
}
