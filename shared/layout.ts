/**
 * Where everything lives in Blob Storage: every blob path the app reads or writes is made
 * here, and nowhere else. Paths keyed by a batch id validate it, so an id from a route, a
 * pointer or a poison record can never reach another blob through `..` or a slash. The batch
 * ids themselves (and the Idempotency-Keys they may come from) are defined here too.
 */
import { createHash, randomUUID } from 'node:crypto';

import { PermanentError } from './errors';
import type { ContainerKey } from './names';

/** A blob, named by its container key (the deployment's prefix is applied by the store). */
export interface BlobRef {
  container: ContainerKey;
  name: string;
}

/**
 * A batch id, as a pattern to embed: batch ids become blob paths, so only these characters ever
 * reach Storage. The one definition (static/openapi.json's `BatchId` says the same; a test holds them together).
 */
export const BATCH_ID_PATTERN = '[a-z0-9][a-z0-9-]{0,63}';
const BATCH_ID = new RegExp(`^${BATCH_ID_PATTERN}$`);

function batch(batchId: string): string {
  if (!isValidBatchId(batchId)) throw new PermanentError('refusing an invalid batch id as a blob path');
  return batchId;
}

/** The index of open batches (accepted, not yet finished): one empty blob per batch. */
export const OPEN_PREFIX = 'open/';

/** The index of each token submitter's batches: `owners/{objectId}/{newest-first key}`, one empty blob per batch. */
const OWNERS_PREFIX = 'owners/';
const OBJECT_ID = /^[A-Za-z0-9-]{1,64}$/;

/** A submitter's part of the owner index (its object id is checked: it becomes a blob path). */
export function ownerPrefix(objectId: string): string {
  if (!OBJECT_ID.test(objectId)) throw new PermanentError('refusing an invalid object id as a blob path');
  return `${OWNERS_PREFIX}${objectId}/`;
}

/** Sorts newest first as text: 13 digits of (10^13 - 1 - epoch ms), then the batch id. */
export function newestFirstKey(submittedAt: string, batchId: string): string {
  const ms = Date.parse(submittedAt);
  return `${String(9_999_999_999_999 - (Number.isFinite(ms) ? ms : 0)).padStart(13, '0')}-${batch(batchId)}`;
}

/** A key made by newestFirstKey (what a listing cursor must be). */
export const NEWEST_FIRST_KEY = new RegExp(`^(\\d{13})-(${BATCH_ID_PATTERN})$`);

/** A manifest's blob name (`{batchId}/manifest.json`, see `layout.manifest`), the batch id captured. */
export const MANIFEST_NAME = new RegExp(`^(${BATCH_ID_PATTERN})/manifest\\.json$`);

export const layout = {
  /** A chunk of transactions, gzip NDJSON (claim check): `work/{batchId}/{chunk}.ndjson.gz`. */
  chunk: (batchId: string, chunk: number): BlobRef => ({
    container: 'work',
    name: `${batch(batchId)}/${chunk}.ndjson.gz`,
  }),
  /** A billed chunk: `results/{batchId}/{chunk}`. */
  result: (batchId: string, chunk: number): BlobRef => ({ container: 'results', name: `${batch(batchId)}/${chunk}` }),
  /** The batch's record of truth: `batches/{batchId}/manifest.json`. */
  manifest: (batchId: string): BlobRef => ({ container: 'batches', name: `${batch(batchId)}/manifest.json` }),
  /** The finished report: `reports/{batchId}.json`. */
  report: (batchId: string): BlobRef => ({ container: 'reports', name: `${batch(batchId)}.json` }),
  /** `batches/open/{batchId}`: present from acceptance until the batch is completed or failed. */
  openBatch: (batchId: string): BlobRef => ({ container: 'batches', name: `${OPEN_PREFIX}${batch(batchId)}` }),
  /**
   * `batches/owners/{objectId}/{newestFirstKey}`: written with the open marker; deleted with its
   * batch's manifest and report by the same lifecycle rule (infra's batchRetentionDays).
   */
  ownerEntry: (objectId: string, submittedAt: string, batchId: string): BlobRef => ({
    container: 'batches',
    name: `${ownerPrefix(objectId)}${newestFirstKey(submittedAt, batchId)}`,
  }),
  /** Drain slot k of a queue, held as a blob lease: `leases/{queue}/slot-{k}`. */
  slot: (queue: string, k: number): BlobRef => ({ container: 'leases', name: `${queue}/slot-${k}` }),
  /**
   * The scaling agent's decision record, guarded by its ETag: `leases/_scale/agent.json`
   * (`_` is not allowed in queue names, so it never meets a drain slot's path).
   */
  scaleState: (): BlobRef => ({ container: 'leases', name: '_scale/agent.json' }),
  /** Batch files are dropped in `incoming/`, then moved to `archive/` or `rejected/`. */
  file: (container: 'incoming' | 'archive' | 'rejected', name: string): BlobRef => ({ container, name }),
  /** Why a file was rejected: `rejected/{name}.error.json`. */
  rejection: (name: string): BlobRef => ({ container: 'rejected', name: `${name}.error.json` }),
  /** A malformed backlog message the syphon set aside, with its reason: `rejected/backlog/{id}.json`. */
  backlogRejection: (id: string): BlobRef => ({
    container: 'rejected',
    name: `backlog/${id.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 128) || 'unnamed'}.json`,
  }),
} as const;

const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/;

export function isValidBatchId(value: string): boolean {
  return BATCH_ID.test(value);
}

export function isValidIdempotencyKey(value: string): boolean {
  return IDEMPOTENCY_KEY.test(value);
}

/** A retry with the same Idempotency-Key maps to the same batch, so a replay finds it. */
export function batchIdFor(idempotencyKey: string | undefined, owner?: string): string {
  if (idempotencyKey === undefined) return `b-${randomUUID()}`;
  // Scoped to its owner: two submitters' equal keys name two batches, so neither can find the other's.
  const scoped = owner === undefined ? idempotencyKey : `${owner}\n${idempotencyKey}`;
  return `k-${createHash('sha256').update(scoped).digest('hex').slice(0, 32)}`;
}
