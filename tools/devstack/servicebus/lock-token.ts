/**
 * Lock tokens. The SDK reads a delivery's tag as a .NET GUID (first three groups
 * little-endian) but sends management lock tokens as RFC 4122 uuids, so one token has two
 * byte layouts. The broker keys locks by the canonical string.
 */
import { randomUUID } from 'node:crypto';

export interface LockToken {
  /** Canonical lower-case uuid string, the SDK's `lockToken`. */
  readonly id: string;
  /** The delivery tag: the same uuid in .NET GUID byte order. */
  readonly tag: Buffer;
}

export function newLockToken(): LockToken {
  const id = randomUUID();
  return { id, tag: swapGuidOrder(uuidBytes(id)) };
}

/** The token for a delivery tag (.NET order); undefined for a tag that is not 16 bytes. */
export function lockTokenFromTag(tag: Buffer | string): string | undefined {
  const bytes = typeof tag === 'string' ? Buffer.from(tag) : tag;
  return bytes.length === 16 ? uuidString(swapGuidOrder(bytes)) : undefined;
}

/** The token for a management `uuid` value (RFC order). */
export function lockTokenFromUuid(bytes: Buffer): string | undefined {
  return bytes.length === 16 ? uuidString(bytes) : undefined;
}

export function uuidBytes(id: string): Buffer {
  return Buffer.from(id.replace(/-/g, ''), 'hex');
}

/** Reverses the first three GUID groups (4, 2, 2 bytes); its own inverse. */
function swapGuidOrder(b: Buffer): Buffer {
  const order = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
  return Buffer.from(order.map((i) => b[i] ?? 0));
}

function uuidString(b: Buffer): string {
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
