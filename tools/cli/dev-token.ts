/**
 * `pushdrain dev-token`: a token of the local issuer that `npm start -- --auth entra` runs, signed
 * with the key in the same data folder (PUSHDRAIN_DATA_DIR, default the repo root). Local only:
 * the key never leaves that folder and is never printed. The token is an access token as the app
 * requires one (shared/auth/token-kind.ts): a person's carries the API's scope in `scp`, an app's
 * (`--app`) carries `idtyp=app` and no `scp`.
 */
import { resolve } from 'node:path';

import type { Role } from '../../shared/auth/principal';
import { loadOrCreateKey, mintDevToken, readIssuerInfo } from '../devstack/dev-issuer';
import { findRepoRoot } from '../devstack/host/registry';
import { CliError } from './client';
import { EXIT } from './exit-codes';

export async function devToken(o: { role: Role[]; name: string; app?: boolean; lifetime: number }): Promise<string> {
  const dataRoot = resolve(findRepoRoot(), process.env.PUSHDRAIN_DATA_DIR ?? '');
  const info = readIssuerInfo(dataRoot);
  if (!info)
    throw new CliError(
      `no local issuer in ${dataRoot}: start the app with npm start -- --auth entra (same PUSHDRAIN_DATA_DIR)`,
      EXIT.usage,
    );
  const key = await loadOrCreateKey(dataRoot);
  return mintDevToken(key, info.issuer, {
    roles: o.role,
    name: o.name,
    lifetimeSeconds: o.lifetime,
    ...(o.app ? { app: true } : {}),
  });
}
