/**
 * The one table that decides whether a Storage or Service Bus failure is worth retrying.
 * Everything else (4xx other than 408/429, validation, corrupt data) is not.
 */
import { PermanentError, TransientError } from '../errors';

export const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);

export const RETRYABLE_SOCKET_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'REQUEST_SEND_ERROR',
]);

/** Service Bus error codes (ServiceBusError.code) that clear up on their own. */
export const RETRYABLE_SERVICE_BUS_CODES = new Set(['ServiceBusy', 'ServiceTimeout', 'ServiceCommunicationProblem', 'GeneralError']);

/** ServerBusy means the namespace is throttling: wait at least this long before trying again. */
export const SERVER_BUSY_WAIT_MS = 10_000;

export interface RetryDecision {
  retry: boolean;
  /** Minimum wait before the next attempt, when the failure dictates one. */
  waitMs?: number;
}

export function retryDecision(error: unknown): RetryDecision {
  if (error instanceof PermanentError) return { retry: false };
  if (error instanceof TransientError) return { retry: true, ...(error.retryAfterMs !== undefined ? { waitMs: error.retryAfterMs } : {}) };
  if (typeof error !== 'object' || error === null) return { retry: false };
  const e = error as { statusCode?: unknown; code?: unknown; name?: unknown };
  if (e.name === 'AbortError' || e.name === 'TimeoutError') return { retry: true };
  if (typeof e.code === 'string') {
    // Service Bus says ServiceBusy; Storage answers 503 with x-ms-error-code ServerBusy.
    if (e.code === 'ServiceBusy' || e.code === 'ServerBusy') return { retry: true, waitMs: SERVER_BUSY_WAIT_MS };
    if (RETRYABLE_SOCKET_CODES.has(e.code) || RETRYABLE_SERVICE_BUS_CODES.has(e.code)) return { retry: true };
  }
  if (typeof e.statusCode === 'number' && RETRYABLE_STATUS.has(e.statusCode)) return { retry: true };
  return { retry: false };
}

export function isTransient(error: unknown): boolean {
  return retryDecision(error).retry;
}
