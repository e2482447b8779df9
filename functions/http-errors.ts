/** Maps the shared error classes to HTTP responses. 5xx bodies never echo internals. */
import type { HttpResponseInit, InvocationContext } from '@azure/functions';

import { ensureError, TransientError, ValidationError } from '../shared/errors';

export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponseInit {
  return { status, jsonBody: body, headers: { 'Content-Type': 'application/json', ...headers } };
}

export function errorResponse(error: unknown, context: InvocationContext): HttpResponseInit {
  const e = ensureError(error);
  if (e instanceof ValidationError) {
    return json(e.status, { error: e.code, message: e.message, ...(e.details.length > 0 ? { details: e.details } : {}) });
  }
  if (e instanceof TransientError) {
    context.warn(`transient failure: ${e.message}`);
    return json(503, { error: 'unavailable', message: 'a dependency is temporarily unavailable; retry', invocationId: context.invocationId }, { 'Retry-After': '5' });
  }
  context.error(`unhandled failure: ${e.stack ?? e.message}`);
  return json(500, { error: 'internal', message: 'internal error', invocationId: context.invocationId });
}
