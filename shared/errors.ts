/**
 * The few error classes the whole app speaks. Adapters map them:
 * ValidationError → 4xx, TransientError → retry, PermanentError → poison at once, NewerFormatError
 * → handed back for a newer instance (a queue message) or retried, never poisoned, AbortedError →
 * the caller is gone (logged, nothing to answer).
 */

export interface ErrorDetail {
  /** 1-based line (NDJSON) or item position (JSON array); 0 when the error is about the whole body. */
  line: number;
  field: string;
  message: string;
}

/**
 * What a ValidationError is about, as clients read it (the `error` field). The HTTP adapter maps
 * each to its status (functions/http-errors.ts); the sweep writes it beside a rejected file.
 */
export type ValidationCode =
  | 'invalid_batch'
  | 'invalid_batch_id'
  | 'invalid_request'
  | 'invalid_idempotency_key'
  | 'callback_not_allowed'
  | 'too_large'
  | 'unsupported_media_type'
  | 'idempotency_conflict'
  | 'ingest_in_progress'
  | 'no_webhooks';

export interface ValidationErrorOptions {
  /** @defaultValue 'invalid_batch' */
  code?: ValidationCode;
  /** One entry per problem found; empty when the problem is the whole body. */
  details?: ErrorDetail[];
  /** When the same request may succeed later (a claim in progress): the seconds to wait. */
  retryAfterSeconds?: number;
}

/** Input the caller must fix. It names no transport's status: each adapter maps `code`. */
export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  readonly code: ValidationCode;
  readonly details: ErrorDetail[];
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, options: ValidationErrorOptions = {}) {
    super(message);
    this.code = options.code ?? 'invalid_batch';
    this.details = options.details ?? [];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** A failure that may succeed if tried again (throttling, timeouts, 5xx, socket errors). */
export class TransientError extends Error {
  override readonly name = 'TransientError';
  constructor(
    message: string,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A failure that will never succeed for this input (corrupt blob, checksum mismatch). */
export class PermanentError extends Error {
  override readonly name = 'PermanentError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A message or blob in a version of its format newer than this build reads (and that does not
 * say this build may read it): an instance of the newer build can. Never poison for it: during a
 * deploy old and new instances share the queues (shared/model/format-version.ts).
 */
export class NewerFormatError extends Error {
  override readonly name = 'NewerFormatError';
  constructor(
    /** The format's name, as format-version.ts's table has it. */
    readonly format: string,
    /** The version found. */
    readonly version: number,
    /** The newest version this build reads. */
    readonly newest: number,
  ) {
    super(`${format} version ${version} is newer than this instance reads (up to ${newest})`);
  }
}

/** The caller's identity may not do this (HTTP 403): retrying cannot help until someone grants it. */
export class AccessDeniedError extends Error {
  override readonly name = 'AccessDeniedError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * The caller went away (an HTTP client disconnected) and the work was stopped: nothing was
 * accepted. Nobody is left to read an answer; adapters log it.
 */
export class AbortedError extends Error {
  override readonly name = 'AbortedError';
}

/** Throws AbortedError once `signal` has fired: a cheap check for the loops of long work. */
export function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError('the client disconnected; the request was abandoned');
}

/**
 * A queue or container the app uses does not exist: infra/ provisions them, and the app never
 * creates one itself (that would cost a request per entity on every cold start, and hide a broken
 * deployment). Retrying cannot help until someone provisions it; the HTTP adapter answers 503.
 */
export class NotProvisionedError extends Error {
  override readonly name = 'NotProvisionedError';
  constructor(
    readonly kind: 'queue' | 'container',
    readonly entity: string,
  ) {
    super(`storage ${kind} "${entity}" does not exist: infra/ provisions it (locally, npm start does)`);
  }
}

/** The NotProvisionedError `error` is, or was caused by (a step may wrap it, as ingest's rollback does). */
export function notProvisionedIn(error: unknown): NotProvisionedError | undefined {
  let e: unknown = error;
  // Bounded: a cause chain is a few links deep; a cycle must not hang an error path.
  for (let depth = 0; depth < 8 && e instanceof Error; depth++) {
    if (e instanceof NotProvisionedError) return e;
    e = e.cause;
  }
  return undefined;
}

/** A setting is missing or out of range; thrown once, at start-up. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`Invalid setting ${setting}: ${message}`);
  }
}

/** Normalise anything thrown into an Error, so adapters can log and classify it safely. */
export function ensureError(value: unknown): Error {
  if (value instanceof Error) return value;
  if (typeof value === 'string') return new Error(value);
  try {
    return new Error(`Non-error thrown: ${JSON.stringify(value)}`);
  } catch {
    return new Error('Non-error thrown (unserialisable)');
  }
}
