/**
 * Maps the shared error classes to HTTP responses, as problem details (problem.ts). 5xx bodies
 * never echo internals.
 */
import type { HttpResponseInit, InvocationContext } from '@azure/functions';

import { AccessError } from '../shared/auth/access-error';
import { AbortedError, ensureError, notProvisionedIn, type ValidationCode, ValidationError } from '../shared/errors';
import { redactSecrets } from '../shared/redaction';
import { isTransient } from '../shared/retry/transient';
import { problem } from './problem';

export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponseInit {
  return { status, jsonBody: body, headers: { 'Content-Type': 'application/json', ...headers } };
}

/**
 * The status of each validation code, as the HTTP contract fixes it (static/openapi.json): a code
 * added without its status here does not compile.
 */
export const VALIDATION_STATUS: Readonly<Record<ValidationCode, 400 | 409 | 413 | 415 | 422>> = {
  invalid_batch: 400,
  invalid_batch_id: 400,
  invalid_request: 400,
  invalid_idempotency_key: 400,
  callback_not_allowed: 400,
  /** A limit on how much the server reads, not a record's fault. */
  too_large: 413,
  unsupported_media_type: 415,
  /**
   * The same Idempotency-Key with another body or Callback-Url: 422, as the IETF draft
   * (draft-ietf-httpapi-idempotency-key-header) says for a reused key with another payload.
   */
  idempotency_conflict: 422,
  /** The same Idempotency-Key still being ingested: it may succeed later (with Retry-After). */
  ingest_in_progress: 409,
  /** The app's configuration, not the request, lacks what it asks for. */
  no_webhooks: 409,
};

export function errorResponse(error: unknown, context: InvocationContext): HttpResponseInit {
  const e = ensureError(error);
  if (e instanceof AccessError) {
    const challenge: Record<string, string> = e.challenge
      ? { 'WWW-Authenticate': `Bearer error="${e.challenge}"` }
      : {};
    return problem(
      e.status,
      e.code,
      e.message,
      e.requiredRoles.length > 0 ? { requiredRoles: e.requiredRoles } : {},
      challenge,
    );
  }
  if (e instanceof ValidationError) {
    const retryAfter: Record<string, string> =
      e.retryAfterSeconds !== undefined ? { 'Retry-After': String(e.retryAfterSeconds) } : {};
    return problem(
      VALIDATION_STATUS[e.code],
      e.code,
      e.message,
      // invalid_batch always carries its details (the contract's shape), empty for a problem of the whole body.
      e.details.length > 0 || e.code === 'invalid_batch' ? { details: e.details } : {},
      retryAfter,
    );
  }
  // Nobody reads this answer; 499 is the customary "client closed request" in logs.
  if (e instanceof AbortedError) return problem(499, 'client_closed_request', e.message);
  // A deployment without a queue or container the app uses: the operator must provision it (the
  // log names it); the client may retry later. The body does not name it: a client has no use for it.
  const missing = notProvisionedIn(e);
  if (missing) {
    context.error(`not provisioned: ${missing.message}${missing === e ? '' : ` (${redactSecrets(e.message)})`}`);
    return problem(
      503,
      'unavailable',
      'the service is not fully provisioned; retry later',
      { invocationId: context.invocationId },
      { 'Retry-After': '60' },
    );
  }
  // Our TransientError, and an SDK error the retry table calls transient (a Storage 503 or a
  // refused connection that outlived the SDK's own retries): the client should retry, so 503.
  if (isTransient(error)) {
    context.warn(`transient failure: ${redactSecrets(e.message)}`);
    return problem(
      503,
      'unavailable',
      'a dependency is temporarily unavailable; retry',
      { invocationId: context.invocationId },
      { 'Retry-After': '5' },
    );
  }
  context.error(`unhandled failure: ${redactSecrets(e.stack ?? e.message)}`);
  return problem(500, 'internal', 'internal error', { invocationId: context.invocationId });
}
