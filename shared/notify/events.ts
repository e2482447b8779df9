/**
 * The WorkDetected event: the only thing Service Bus carries. It says "queue Q of account A
 * has work"; the work itself stays in Storage (claim check), so events stay tiny.
 */
import type { Role } from '../names';

export interface WorkDetected {
  storageAccount: string;
  queueName: string;
  /** Compressed bytes of work behind the pointers just enqueued (a load signal for scaling). */
  payloadSize: number;
  role: Role;
  batchId?: string;
}

export interface PublishOptions {
  /** Deliver no earlier than this many ms from now (a scheduled message); 0 = now. */
  delayMs?: number;
}

/** Implemented over Service Bus in production and by a capturing fake in unit tests. */
export interface WorkPublisher {
  publish(events: readonly WorkDetected[], options?: PublishOptions): Promise<void>;
  close(): Promise<void>;
}

const QUEUE_NAME = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/;

/** Parses an event from a trigger body; a malformed one is a PermanentError upstream (dead-letter, don't retry). */
export function parseWorkDetected(body: unknown): WorkDetected | string {
  const value: unknown = typeof body === 'string' ? safeJson(body) : body instanceof Uint8Array ? safeJson(Buffer.from(body).toString('utf8')) : body;
  if (typeof value !== 'object' || value === null) return 'event body is not a JSON object';
  const v = value as Record<string, unknown>;
  if (typeof v.queueName !== 'string' || !QUEUE_NAME.test(v.queueName)) return 'queueName is missing or not a valid queue name';
  if (v.role !== 'input' && v.role !== 'output') return 'role must be "input" or "output"';
  if (typeof v.storageAccount !== 'string' || v.storageAccount.length === 0) return 'storageAccount is missing';
  const payloadSize = typeof v.payloadSize === 'number' && Number.isFinite(v.payloadSize) && v.payloadSize >= 0 ? v.payloadSize : 0;
  return {
    storageAccount: v.storageAccount,
    queueName: v.queueName,
    payloadSize,
    role: v.role,
    ...(typeof v.batchId === 'string' ? { batchId: v.batchId } : {}),
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
