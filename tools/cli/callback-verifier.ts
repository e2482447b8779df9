/**
 * A client's verification of a callback, as README's receiver sample writes it: Standard Webhooks'
 * `v1a` (ed25519) against the public keys of GET /api/events/keys (`whpk_…`), with node:crypto
 * alone; a timestamp more than 5 minutes off is refused, and so is an event whose signed
 * `data.recipient` is not the receiver's own (another client's batch aimed here, or replayed).
 * `pushdrain callbacks verify` runs it; the tests' receivers use it too.
 */
import { createPublicKey, verify } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** Who the receiver is: a user's object id, an app's client id, or `{kind: 'key'}` in `keys` mode. */
export type Me = { kind: 'user' | 'app'; id: string } | { kind: 'key' };

/** `app:<client id>`, `user:<object id>` or `key`, as the CLI takes it; undefined for anything else. */
export function parseMe(text: string): Me | undefined {
  if (text === 'key') return { kind: 'key' };
  const m = /^(app|user):([A-Za-z0-9-]{1,64})$/.exec(text);
  return m ? { kind: m[1] as 'app' | 'user', id: m[2]! } : undefined;
}

/** The verified event; an Error saying which check failed otherwise. */
export function verifyCallback(
  body: string,
  headers: IncomingHttpHeaders,
  publicKeys: readonly string[],
  me: Me,
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
  const event = JSON.parse(body) as { data?: { recipient?: { kind?: unknown; id?: unknown } } };
  const to = event.data?.recipient;
  if (to?.kind !== me.kind || to.id !== ('id' in me ? me.id : undefined)) throw new Error('not an event for me');
  return event;
}
