/**
 * The errors ingest answers with besides a record's problems, each built in one place so that
 * its code and wording cannot drift between the HTTP adapter, the body reader and the
 * record readers.
 */
import { ValidationError } from '../errors';
import { isValidIdempotencyKey } from '../layout';

/** too_large (413): a limit on how much the server reads (body, inflated body, blank lines), not a record's fault. */
export function tooLarge(message: string): ValidationError {
  return new ValidationError(message, { code: 'too_large' });
}

const KEY_RULE = 'must be 1-128 characters of A-Z a-z 0-9 . _ : -';

/** The optional Idempotency-Key, checked before anything is read: a bad one is invalid_idempotency_key (400). */
export function checkIdempotencyKey(key: string | undefined): void {
  if (key !== undefined && !isValidIdempotencyKey(key)) {
    throw new ValidationError(`Idempotency-Key ${KEY_RULE}`, { code: 'invalid_idempotency_key' });
  }
}

/**
 * A body read twice (a sweep file is streamed from its blob each time) differed the second
 * time. Not the client's fault, and nothing was accepted: a plain Error, so ingest rolls back.
 */
export function bodyChanged(where: string): Error {
  return new Error(`body changed between passes: ${where}`);
}
