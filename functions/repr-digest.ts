/**
 * The `Repr-Digest` field of RFC 9530: `sha-256=:<base64>:` (a Structured Fields dictionary whose
 * value is a byte sequence), of the bytes of the representation sent. No content coding is applied
 * to a report, so the representation's bytes are the body's.
 */
import { createHash } from 'node:crypto';

export function reprDigest(body: Buffer): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
}
