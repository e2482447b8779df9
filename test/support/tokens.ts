/**
 * Tokens for the access tests, from the local issuer (tools/devstack/dev-issuer.ts) on a fresh
 * data folder, and the bad ones a matrix needs: expired, another audience, an unknown signing
 * key, `alg: none`, a forged X-MS-CLIENT-PRINCIPAL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { exportJWK, generateKeyPair } from 'jose';

import type { Role } from '../../shared/auth/principal';
import {
  type DevIssuer,
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
  token(name: string, roles: readonly Role[], extra?: { lifetimeSeconds?: number; audience?: string }): Promise<string>;
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
