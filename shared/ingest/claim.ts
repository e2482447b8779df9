/**
 * Claiming a batch id before writing anything under it. With an Idempotency-Key the id is
 * derived from the key, so the manifest's create-if-absent is what de-duplicates: a replay
 * finds the accepted batch and enqueues nothing.
 */
import type { Manifest } from '../batch/manifest';
import { publicStatus } from '../batch/manifest';
import type { ManifestStore } from '../batch/manifest-store';
import { TransientError, ValidationError } from '../errors';

/** An `ingesting` manifest older than this belongs to a request that died; a retry may take it over. */
export const STALE_INGEST_MS = 10 * 60 * 1000;

export type Claim =
  | { kind: 'new'; manifest: Manifest; etag: string }
  | { kind: 'replay'; manifest: Manifest };

export async function claimBatch(store: ManifestStore, fresh: Manifest, now: number): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const etag = await store.create(fresh);
    if (etag !== undefined) return { kind: 'new', manifest: fresh, etag };
    const existing = await store.read(fresh.batchId);
    if (!existing) continue; // removed in between: try to create again
    const m = existing.manifest;
    if (m.bodySha256 !== fresh.bodySha256) {
      throw new ValidationError('this Idempotency-Key was already used with a different body', 409, 'idempotency_conflict');
    }
    if (publicStatus(m)) return { kind: 'replay', manifest: m };
    const age = now - Date.parse(m.submittedAt);
    if (m.state === 'ingesting' && age < STALE_INGEST_MS) {
      throw new ValidationError('a request with this Idempotency-Key is still being ingested; retry shortly', 409, 'ingest_in_progress');
    }
    // Take over an abandoned or stale attempt. Its done chunks stay valid: same body, same
    // chunking (the recorded chunk size wins), same blob names.
    const takeover: Manifest = { ...fresh, chunkSize: m.chunkSize, done: m.done, failed: m.failed };
    const took = await store.replace(takeover, existing.etag);
    if (took !== undefined) return { kind: 'new', manifest: takeover, etag: took };
  }
  throw new TransientError(`could not claim batch ${fresh.batchId}: its manifest keeps changing`);
}
