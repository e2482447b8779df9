/**
 * The one table that decides what a Storage or Service Bus failure means: whether to retry it,
 * and (for a Service Bus send, after the SDK's own retries) whether it counts toward failing
 * over to the secondary namespace. Everything else (4xx other than 408/429, validation, corrupt
 * data) is not retried.
 */
import { PermanentError, TransientError } from '../errors';

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);

const RETRYABLE_SOCKET_CODES = new Set([
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

/**
 * What a send failure means for the paired namespaces: `outage` counts toward failing over,
 * `busy` is throttling (wait SERVER_BUSY_WAIT_MS, never fail over), `permanent` is a
 * misconfiguration or a bad message (never fail over; health turns red).
 */
export type FailoverClass = 'outage' | 'busy' | 'permanent';

/** Service Bus error codes (ServiceBusError.code): retry the operation? fail over a send? */
const SERVICE_BUS_CODES: Readonly<Record<string, { retry: boolean; failover: FailoverClass }>> = {
  ServiceBusy: { retry: true, failover: 'busy' },
  ServiceTimeout: { retry: true, failover: 'outage' },
  ServiceCommunicationProblem: { retry: true, failover: 'outage' },
  // The SDK's catch-all, which is also what a reset or refused connection surfaces as.
  GeneralError: { retry: true, failover: 'outage' },
  // The namespace or entity is full: retrying the same place will not help, the secondary will.
  QuotaExceeded: { retry: false, failover: 'outage' },
  UnauthorizedAccess: { retry: false, failover: 'permanent' },
  MessagingEntityNotFound: { retry: false, failover: 'permanent' },
  MessagingEntityDisabled: { retry: false, failover: 'permanent' },
  MessageSizeExceeded: { retry: false, failover: 'permanent' },
};

/** Service Bus error codes that clear up on their own. */
const RETRYABLE_SERVICE_BUS_CODES = new Set(
  Object.entries(SERVICE_BUS_CODES)
    .filter(([, v]) => v.retry)
    .map(([k]) => k),
);

/** ServerBusy means the namespace is throttling: wait at least this long before trying again. */
export const SERVER_BUSY_WAIT_MS = 10_000;

export interface RetryDecision {
  retry: boolean;
  /** Minimum wait before the next attempt, when the failure dictates one. */
  waitMs?: number;
}

/**
 * The attempts behind an error. The Service Bus SDK throws an AggregateError of every attempt's
 * error once its own retries are spent; the most recent attempt comes last.
 */
function attempts(error: unknown): unknown[] {
  return error instanceof AggregateError && error.errors.length > 0
    ? [...(error.errors as unknown[])].reverse()
    : [error];
}

function decideOne(error: unknown): RetryDecision {
  if (error instanceof PermanentError) return { retry: false };
  if (error instanceof TransientError)
    return { retry: true, ...(error.retryAfterMs !== undefined ? { waitMs: error.retryAfterMs } : {}) };
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

export function retryDecision(error: unknown): RetryDecision {
  // The latest attempt decides; a ServerBusy among the attempts still imposes its wait.
  const all = attempts(error).map(decideOne);
  const latest = all[0] ?? { retry: false };
  const waitMs = Math.max(...all.map((d) => d.waitMs ?? 0));
  return latest.retry && waitMs > 0 ? { retry: true, waitMs } : latest;
}

export function isTransient(error: unknown): boolean {
  return retryDecision(error).retry;
}

function failoverOne(error: unknown): FailoverClass {
  if (error instanceof PermanentError) return 'permanent';
  if (error instanceof TransientError) return 'outage';
  if (typeof error !== 'object' || error === null) return 'permanent';
  const e = error as { code?: unknown };
  if (typeof e.code === 'string') {
    const known = SERVICE_BUS_CODES[e.code];
    if (known) return known.failover;
    if (RETRYABLE_SOCKET_CODES.has(e.code)) return 'outage';
  }
  // A bug does not heal by moving elsewhere.
  if (
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof ReferenceError ||
    error instanceof SyntaxError
  )
    return 'permanent';
  // The rest comes from the SDK's transport without a code ("Failed to connect", a connection
  // open that timed out, an abort): a communication problem.
  return 'outage';
}

const FAILOVER_PRECEDENCE: readonly FailoverClass[] = ['permanent', 'busy', 'outage'];

/**
 * What a failed send means for failover, after the SDK's own retries. A misconfiguration seen
 * in any attempt wins (it will not heal by moving elsewhere), then throttling, then an outage.
 */
export function failoverClass(error: unknown): FailoverClass {
  const seen = new Set(attempts(error).map(failoverOne));
  return FAILOVER_PRECEDENCE.find((c) => seen.has(c)) ?? 'outage';
}

/** One line for logs and health: the latest attempt's code and message (an AggregateError's own message is empty). */
export function failureSummary(error: unknown): string {
  const all = attempts(error);
  const latest = all[0];
  const e = latest instanceof Error ? latest : new Error(String(latest));
  const code = (e as { code?: unknown }).code;
  const text = `${typeof code === 'string' ? `${code}: ` : ''}${e.message || e.name}`;
  return all.length > 1 ? `${text} (after ${all.length} attempts)` : text;
}
