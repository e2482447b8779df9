/**
 * Conditional GET of a batch's status: the ETag is a hash of the status body, so it changes exactly
 * when what a client sees changes, and `If-None-Match` with the current one is a 304 without a body.
 * The manifest is read either way (one Storage transaction, as a 304 from Storage would be too): what
 * a poll saves is the body and the client's work, and the client backs off while answers are 304.
 */
import { createHash } from 'node:crypto';

import type { HttpRequest } from '@azure/functions';

export function statusEtag(body: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 27)}"`;
}

/** True when the request's If-None-Match names `etag` (or `*`). */
export function notModified(req: HttpRequest, etag: string): boolean {
  const header = req.headers.get('if-none-match');
  if (!header) return false;
  return header
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === etag || t === '*');
}
