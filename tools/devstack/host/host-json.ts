/** The parts of host.json the local host honours, with the Functions host's defaults. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ServiceBusHostOptions {
  maxConcurrentCalls: number;
  maxAutoLockRenewalDurationMs: number;
  autoCompleteMessages: boolean;
  retry: { maxRetries: number; retryDelayInMs: number; maxRetryDelayInMs: number; timeoutInMs: number };
  /** How often ongoing receive errors are summarised in the log (not in host.json). @defaultValue 30_000 */
  receiveErrorSummaryMs?: number;
}

/** `hh:mm:ss[.fff]` (optionally `d.hh:mm:ss`) to ms. */
export function timespanMs(value: string): number {
  const m = /^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(value.trim());
  if (!m) throw new Error(`host.json: "${value}" is not a timespan (hh:mm:ss)`);
  return Math.round(((Number(m[1] ?? 0) * 24 + Number(m[2])) * 3600 + Number(m[3]) * 60 + Number(m[4])) * 1000);
}

export function serviceBusOptions(root: string): ServiceBusHostOptions {
  const host = JSON.parse(readFileSync(join(root, 'host.json'), 'utf8')) as {
    extensions?: { serviceBus?: Record<string, unknown> };
  };
  const sb = host.extensions?.serviceBus ?? {};
  const retry = (sb.clientRetryOptions ?? {}) as Record<string, unknown>;
  return {
    maxConcurrentCalls: typeof sb.maxConcurrentCalls === 'number' ? sb.maxConcurrentCalls : 16,
    maxAutoLockRenewalDurationMs:
      typeof sb.maxAutoLockRenewalDuration === 'string' ? timespanMs(sb.maxAutoLockRenewalDuration) : 5 * 60_000,
    autoCompleteMessages: sb.autoCompleteMessages !== false,
    retry: {
      maxRetries: typeof retry.maxRetries === 'number' ? retry.maxRetries : 3,
      retryDelayInMs: typeof retry.delay === 'string' ? timespanMs(retry.delay) : 800,
      maxRetryDelayInMs: typeof retry.maxDelay === 'string' ? timespanMs(retry.maxDelay) : 60_000,
      timeoutInMs: typeof retry.tryTimeout === 'string' ? timespanMs(retry.tryTimeout) : 60_000,
    },
  };
}
