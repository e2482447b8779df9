import { createHash, randomUUID } from 'node:crypto';

/** Batch ids become blob paths, so only these characters ever reach Storage. */
const BATCH_ID = /^[a-z0-9][a-z0-9-]{0,63}$/;
const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/;

export function isValidBatchId(value: string): boolean {
  return BATCH_ID.test(value);
}

export function isValidIdempotencyKey(value: string): boolean {
  return IDEMPOTENCY_KEY.test(value);
}

/** A retry with the same Idempotency-Key maps to the same batch, so a replay finds it. */
export function batchIdFor(idempotencyKey: string | undefined): string {
  if (idempotencyKey === undefined) return `b-${randomUUID()}`;
  return `k-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 32)}`;
}
