/**
 * An error answer as RFC 9457 problem details (`application/problem+json`): `type`, `title`,
 * `status` and `detail`, with the body's older members `error` (the code) and `message` (the same
 * words as `detail`) kept beside them as extension members, so a client written against them
 * still reads them. No `instance`: the answer names no resource of its own.
 */
import type { HttpResponseInit } from '@azure/functions';

/** Each error code's `type`: a tag URI (RFC 4151), an identifier not meant to be fetched (RFC 9457 §3.1.1). */
export const PROBLEM_TYPE_PREFIX = 'tag:pushdrain,2026:';

/** The `title` of each code: the same for every occurrence of it, as RFC 9457 asks. */
const TITLES: Readonly<Record<string, string>> = {
  invalid_batch: 'The batch is invalid',
  invalid_batch_id: 'The batch id is malformed',
  invalid_request: 'The request is invalid',
  invalid_idempotency_key: 'The Idempotency-Key is malformed',
  callback_not_allowed: 'The Callback-Url is not allowed',
  too_large: 'The body is too large',
  unsupported_media_type: 'The media type is not supported',
  idempotency_conflict: 'The Idempotency-Key was used with another request',
  ingest_in_progress: 'A request with this Idempotency-Key is in progress',
  no_webhooks: 'No webhook is configured',
  not_found: 'Not found',
  not_ready: 'The report is not ready',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  client_closed_request: 'The client closed the request',
  unavailable: 'Temporarily unavailable',
  internal: 'Internal error',
};

export function problem(
  status: number,
  error: string,
  message: string,
  extensions: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): HttpResponseInit {
  return {
    status,
    jsonBody: {
      type: `${PROBLEM_TYPE_PREFIX}${error}`,
      title: TITLES[error] ?? error,
      status,
      detail: message,
      error,
      message,
      ...extensions,
    },
    headers: { 'Content-Type': 'application/problem+json', ...headers },
  };
}
