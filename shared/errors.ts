/**
 * The few error classes the whole app speaks. Adapters map them:
 * ValidationError → 4xx, TransientError → retry, PermanentError → poison at once, AbortedError →
 * the caller is gone (logged, nothing to answer).
 */

export interface ErrorDetail {
  /** 1-based line (NDJSON) or item position (JSON array); 0 when the error is about the whole body. */
  line: number;
  field: string;
  message: string;
}

/** Input the caller must fix. Carries the HTTP status it maps to. */
export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  constructor(
    message: string,
    readonly status: 400 | 409 | 413 | 415 = 400,
    readonly code: string = 'invalid_batch',
    readonly details: ErrorDetail[] = [],
    /** When the same request may succeed later (a claim in progress): the Retry-After to send. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
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
