/**
 * A client's verification of a callback, as README's receiver sample writes it: Standard Webhooks'
 * `v1a` (ed25519) against the public keys of GET /api/events/keys (`whpk_…`), with node:crypto
 * alone; a timestamp more than 5 minutes off is refused.
 */
import { createPublicKey, verify } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export function verifyCallback(
  body: string,
  headers: IncomingHttpHeaders,
  publicKeys: readonly string[],
  now = Date.now(),
): unknown {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string')
    throw new Error('missing webhook headers');
  if (!(Math.abs(now / 1000 - Number(timestamp)) <= 300)) throw new Error('timestamp too old or too new');
  const signed = Buffer.from(`${id}.${timestamp}.${body}`, 'utf8');
  const keys = publicKeys.map((k) =>
    createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(k.replace(/^whpk_/, ''), 'base64').toString('base64url') },
      format: 'jwk',
    }),
  );
  const valid = signatures
    .split(' ')
    .some((s) => s.startsWith('v1a,') && keys.some((k) => verify(null, signed, k, Buffer.from(s.slice(4), 'base64'))));
  if (!valid) throw new Error('no valid v1a signature');
  return JSON.parse(body);
}

/** The `whpk_` keys the host publishes for callbacks (anonymous GET /api/events/keys). */
export async function callbackKeys(base: string): Promise<string[]> {
  const res = await fetch(`${base}/api/events/keys`);
  if (res.status !== 200) throw new Error(`GET /api/events/keys: ${res.status}`);
  return ((await res.json()) as { keys: { whpk: string }[] }).keys.map((k) => k.whpk);
}
