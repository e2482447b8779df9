/**
 * `npm start`'s callback signing key. The app takes none by default and refuses callback origins
 * without one (shared/config/event-settings.ts); locally, with PUSHDRAIN_CALLBACK_ORIGINS set and
 * PUSHDRAIN_CALLBACK_SIGNING_KEY not, one is made in the data folder on first use, as the local
 * issuer keeps its key there, so callbacks work out of the box and keep verifying across restarts.
 * Nothing makes one in Azure.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const KEY = /^whsk_[A-Za-z0-9+/]{43}=$/;

/** The folder of the local callback key (ignored by git, like the other local secrets). */
function devCallbackKeyDir(dataRoot: string): string {
  return join(dataRoot, '.dev-callback-key');
}

/** The data folder's key (`whsk_` and 32 random bytes), made readable by its owner only on first use. */
export function loadOrCreateCallbackKey(dataRoot: string): string {
  const dir = devCallbackKeyDir(dataRoot);
  const file = join(dir, 'signing-key');
  if (existsSync(file)) {
    const stored = readFileSync(file, 'utf8').trim();
    if (!KEY.test(stored)) throw new Error(`${file} is not a callback signing key (whsk_ and 32 bytes): delete it`);
    return stored;
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const key = `whsk_${randomBytes(32).toString('base64')}`;
  writeFileSync(file, key, { mode: 0o600 });
  chmodSync(file, 0o600);
  return key;
}
