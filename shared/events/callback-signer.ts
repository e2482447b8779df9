/**
 * Signs a client's callbacks with Standard Webhooks' asymmetric scheme: `v1a,` and the base64
 * ed25519 signature of `{webhook-id}.{webhook-timestamp}.{body}`. A client verifies with the public
 * key (`whpk_…`, published anonymously at GET /api/events/keys), which cannot sign anything, so no
 * client can forge an event for the operator or for another client. Several keys (a rotation) each
 * sign: the header carries one signature per key, and a receiver accepts any key it trusts.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign } from 'node:crypto';

import type { Secret } from '../config/event-settings';

/** The DER prefix of a PKCS#8 ed25519 private key, before its 32-byte seed (RFC 8410). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** One published verification key: a JWK (RFC 8037) with Standard Webhooks' `whpk_` form beside it. */
export interface PublishedKey {
  kid: string;
  kty: 'OKP';
  crv: 'Ed25519';
  /** The raw public key, base64url. */
  x: string;
  use: 'sig';
  alg: 'EdDSA';
  /** The same key as Standard Webhooks writes it: `whpk_` and base64. */
  whpk: string;
}

/** The private key of a `whsk_` seed (32 bytes, base64; the 64-byte seed-and-public form also). */
export function ed25519FromSeed(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed.subarray(0, 32)]), format: 'der', type: 'pkcs8' });
}

export class CallbackSigner {
  readonly #keys: readonly KeyObject[];
  readonly #published: readonly PublishedKey[];

  /** `keys`: `whsk_` secrets, the first the current one (PUSHDRAIN_CALLBACK_SIGNING_KEY). */
  constructor(keys: readonly Secret[]) {
    this.#keys = keys.map((k) => ed25519FromSeed(Buffer.from(k.reveal().slice('whsk_'.length), 'base64')));
    this.#published = this.#keys.map((k) => publish(k));
  }

  /** The `webhook-signature` value: one `v1a,` signature per key, space-separated. */
  signature(eventId: string, at: Date, body: string): string {
    const content = Buffer.from(`${eventId}.${Math.floor(at.getTime() / 1000)}.${body}`, 'utf8');
    return this.#keys.map((k) => `v1a,${sign(null, content, k).toString('base64')}`).join(' ');
  }

  /** What GET /api/events/keys answers: every key that signs, none of them secret. */
  published(): { keys: PublishedKey[] } {
    return { keys: this.#published.map((k) => ({ ...k })) };
  }
}

function publish(key: KeyObject): PublishedKey {
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  const raw = Buffer.from(String(jwk.x), 'base64url');
  return {
    kid: createHash('sha256').update(raw).digest('base64url').slice(0, 16),
    kty: 'OKP',
    crv: 'Ed25519',
    x: raw.toString('base64url'),
    use: 'sig',
    alg: 'EdDSA',
    whpk: `whpk_${raw.toString('base64')}`,
  };
}
