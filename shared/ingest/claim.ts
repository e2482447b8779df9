/**
 * Claiming a batch id before writing anything under it. With an Idempotency-Key the id is
 * derived from the key, so the manifest's create-if-absent is what de-duplicates: a replay
 * finds the accepted batch and enqueues nothing.
 *
 * While a request ingests, it keeps the claim alive with a heartbeat (`aliveAt`). A claim
 * whose heartbeat stopped belongs to a request that died (host killed, timed out); the
 * client's retry takes it over instead of waiting out a long lease.
 */
import { publicStatus } from '../batch/batch-status';
import type { Manifest } from '../batch/manifest';
import type { ManifestStore } from '../batch/manifest-store';
import { ensureError, TransientError, ValidationError } from '../errors';

/**
 * An `ingesting` claim with no heartbeat for this long belongs to a request that died: the
 * default of PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS.
 */
export const STALE_INGEST_MS = 30_000;
/** Six beats per staleness window: a few slow or failed writes do not make a live claim look dead. */
export function heartbeatIntervalMs(staleMs: number): number {
  return staleMs / 6;
}

/** Whether an `ingesting` claim has outlived its heartbeat: its request died. */
export function isStaleClaim(m: Manifest, now: number, staleMs: number): boolean {
  return now - lastAlive(m) >= staleMs;
}

export type Claim = { kind: 'new'; manifest: Manifest; etag: string } | { kind: 'replay'; manifest: Manifest };

/** When an ingesting claim was last known alive. */
function lastAlive(m: Manifest): number {
  return Date.parse(m.aliveAt ?? m.submittedAt);
}

export async function claimBatch(
  store: ManifestStore,
  fresh: Manifest,
  now: number,
  staleMs: number = STALE_INGEST_MS,
): Promise<Claim> {
  // With a key, look before writing: a replay or a conflicting request must not even try a write.
  let existing = fresh.idempotencyKey !== undefined ? await store.read(fresh.batchId) : undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (!existing) {
      const etag = await store.create(fresh);
      if (etag !== undefined) return { kind: 'new', manifest: fresh, etag };
      existing = await store.read(fresh.batchId);
      if (!existing) continue; // removed in between: try to create again
    }
    const m = existing.manifest;
    // Our own create applied, but its response was lost and the SDK's retry saw "exists".
    if (fresh.attempt !== undefined && m.attempt === fresh.attempt && m.state === 'ingesting') {
      return { kind: 'new', manifest: m, etag: existing.etag };
    }
    // The callback is part of the request's identity: the same key with another one is not a retry.
    if (m.bodySha256 !== fresh.bodySha256 || m.callbackUrl !== fresh.callbackUrl) {
      throw new ValidationError(
        m.bodySha256 !== fresh.bodySha256
          ? 'this Idempotency-Key was already used with a different body'
          : 'this Idempotency-Key was already used with a different Callback-Url',
        { code: 'idempotency_conflict' },
      );
    }
    if (publicStatus(m)) return { kind: 'replay', manifest: m };
    if (m.state === 'ingesting' && !isStaleClaim(m, now, staleMs)) {
      const wait = Math.max(1, Math.ceil((staleMs - (now - lastAlive(m))) / 1000));
      throw new ValidationError('a request with this Idempotency-Key is still being ingested; retry shortly', {
        code: 'ingest_in_progress',
        retryAfterSeconds: Math.min(wait, 5),
      });
    }
    // Take over an abandoned or dead attempt. Its done chunks stay valid: same body, same
    // chunking (the recorded chunk size and piece win), same blob names.
    const takeover: Manifest = { ...fresh, chunkSize: m.chunkSize, done: m.done, failed: m.failed };
    if (m.chunkPiece !== undefined) takeover.chunkPiece = m.chunkPiece;
    else delete takeover.chunkPiece;
    const took = await store.replace(takeover, existing);
    if (took !== undefined) return { kind: 'new', manifest: takeover, etag: took };
    existing = undefined; // changed meanwhile: start over
  }
  throw new TransientError(`could not claim batch ${fresh.batchId}: its manifest keeps changing`);
}

/** Whether `m` is still the claim of the request with this attempt id. */
export function isOwnClaim(m: Manifest, attempt: string | undefined): boolean {
  return m.state === 'ingesting' && m.attempt === attempt;
}

export interface HeartbeatOptions {
  store: ManifestStore;
  /** The claim to keep alive: only while it is still this attempt's. */
  claim: Manifest;
  now: () => number;
  warn: (message: string) => void;
  /** @defaultValue heartbeatIntervalMs(STALE_INGEST_MS) */
  intervalMs?: number;
}

export interface Heartbeat {
  /** Stops beating and waits for a beat in flight, so no beat lands after the caller's next write. */
  stop(): Promise<void>;
}

/**
 * Refreshes `aliveAt` on the claim every `intervalMs` until stopped. A failed beat is only
 * logged: the claim stays valid until it is stale, and the next beat may succeed.
 */
export function startHeartbeat({
  store,
  claim,
  now,
  warn,
  intervalMs = heartbeatIntervalMs(STALE_INGEST_MS),
}: HeartbeatOptions): Heartbeat {
  let inFlight: Promise<void> = Promise.resolve();
  let stopped = false;
  const beat = async (): Promise<void> => {
    try {
      const aliveAt = new Date(now()).toISOString();
      await store.update(claim.batchId, (cur) => (isOwnClaim(cur, claim.attempt) ? { ...cur, aliveAt } : undefined));
    } catch (e) {
      warn(
        `batch ${claim.batchId}: ingest heartbeat failed (the claim stays valid until stale): ${ensureError(e).message}`,
      );
    }
  };
  const timer = setInterval(() => {
    if (stopped) return;
    inFlight = inFlight.then(beat);
  }, intervalMs);
  timer.unref();
  return {
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(timer);
      await inFlight;
    },
  };
}
