/**
 * Ingest: validate everything (writing nothing, but keeping the chunk blobs it cuts on the
 * way), claim the batch, write the chunk blobs, enqueue one pointer per chunk, mark the
 * manifest accepted, and only then publish one WorkDetected per queue touched; the `202` goes
 * out after both. Any failure before the accept leaves no accepted batch. A kill between the
 * accept and the publish leaves an accepted batch nobody woke, and no `202`: the client's retry
 * with its Idempotency-Key re-sends the wake-up (replay), and without a retry the batch's
 * watchdog check (scheduled before the accept) or the sweep's stall check wakes it.
 */
import { randomUUID } from 'node:crypto';

import type { Recipient, Submitter } from '../auth/principal';
import { controlTotalsOf, type PublicStatus, publicStatus } from '../batch/batch-status';
import { isSettled, type Manifest } from '../batch/manifest';
import type { ManifestStore } from '../batch/manifest-store';
import type { OpenBatches } from '../batch/open-batches';
import type { SubmitterIndex } from '../batch/submitter-index';
import { attributeTo, withBatch } from '../cost/usage-scope';
import { AbortedError, checkAborted, ensureError, TransientError, ValidationError } from '../errors';
import { batchIdFor } from '../layout';
import { type EncodedChunk, joinPieces } from '../model/chunk-codec';
import type { ControlTotals } from '../model/control-totals';
import type { EntityNames } from '../names';
import type { Notifier, Wake } from '../notify/notifier';
import type { Finalizer } from '../pipeline/finalize';
import type { BlobStore, Logger, QueueStore } from '../ports';
import { NO_TELEMETRY, type SpanHandle, type Telemetry } from '../telemetry/telemetry';
import { Pool } from '../util/pool';
import type { BodySource } from './body';
import { type ChunkRule, fixedChunks } from './chunk-size';
import type { Kept } from './chunk-source';
import { claimBatch, type Heartbeat, heartbeatIntervalMs, isOwnClaim, STALE_INGEST_MS, startHeartbeat } from './claim';
import { checkIdempotencyKey } from './ingest-errors';
import type { BodyFormat } from './records';
import { validateBody } from './validate-body';
import { writeChunks } from './write-chunks';

export interface IngestRequest {
  open: BodySource;
  format: BodyFormat;
  idempotencyKey?: string;
  /** Already checked against the allowlist (shared/events/callback-policy.ts). */
  callbackUrl?: string;
  source: 'http' | 'sweep';
  sourceName?: string;
  /** The token holder submitting it: recorded on the manifest, and the scope of its Idempotency-Key. */
  submitter?: Submitter;
  /** Whom the batch's events belong to: recorded on the manifest, named in every event's data. */
  recipient?: Recipient;
  /** Fires when the client goes away: the ingest stops before its next step and accepts nothing. */
  signal?: AbortSignal;
  /** The caller's W3C trace context: the batch's trace continues it. */
  traceparent?: string;
}

export interface IngestResult {
  batchId: string;
  status: PublicStatus;
  transactions: number;
  chunks: number;
  /** What was counted from the accepted records; absent on the replay of a batch accepted before they were kept. */
  controlTotals?: ControlTotals;
  /** True when an Idempotency-Key matched an existing batch: nothing was enqueued. */
  replayed: boolean;
  /** False when the WorkDetected events could not be published (the batch is still safe). */
  notified: boolean;
}

export interface IngestDeps {
  blobs: BlobStore;
  queues: QueueStore;
  manifests: ManifestStore;
  notifier: Notifier;
  open: OpenBatches;
  /** Each token submitter's batches (GET /api/batches for a submitter); absent: none recorded. */
  owners?: SubmitterIndex;
  finalizer: Finalizer;
  names: EntityNames;
  /** PUSHDRAIN_CHUNK_SIZE: without `chunks`, every chunk holds exactly this many; with it, the cap. */
  chunkSize: number;
  /** How each batch is cut (chunk-size.ts). @defaultValue fixedChunks(chunkSize) */
  chunks?: ChunkRule;
  now: () => number;
  log: Logger;
  /** @defaultValue MAX_KEPT_BYTES */
  keepBytes?: number;
  /** PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS, in ms. @defaultValue STALE_INGEST_MS */
  claimStaleMs?: number;
  /** @defaultValue NO_TELEMETRY */
  telemetry?: Telemetry;
}

/**
 * Compressed chunk bytes the validation pass may keep for writing (~20 MB for 1,000,000
 * typical transactions); a bigger batch is cut again in a second pass.
 */
const MAX_KEPT_BYTES = 64 * 1024 * 1024;
const ENQUEUE_CONCURRENCY = 16;

export class Ingestor {
  constructor(private readonly deps: IngestDeps) {}

  /** The batch's trace starts here: its ingest span's context goes on the manifest, pointers and events. */
  ingest(req: IngestRequest): Promise<IngestResult> {
    const telemetry = this.deps.telemetry ?? NO_TELEMETRY;
    return telemetry.inSpan(
      'pushdrain.ingest',
      { parent: req.traceparent, attributes: { 'pushdrain.source': req.source } },
      async (span) => {
        // Its own unit: a sweep ingests several batches in one invocation.
        const result = await withBatch(undefined, 'ingest', () => ingest(this.deps, req, span));
        span.set('pushdrain.batch_id', result.batchId);
        span.set('pushdrain.transactions', result.transactions);
        span.set('pushdrain.chunks', result.chunks);
        span.set('pushdrain.replayed', result.replayed);
        return result;
      },
    );
  }
}

async function ingest(ctx: IngestDeps, req: IngestRequest, span: SpanHandle): Promise<IngestResult> {
  checkIdempotencyKey(req.idempotencyKey);
  const rule = ctx.chunks ?? fixedChunks(ctx.chunkSize);
  const summary = await validateBody(req.open, req.format, {
    size: rule.piece,
    maxBytes: ctx.keepBytes ?? MAX_KEPT_BYTES,
  });
  const plan = rule.plan(summary);
  checkAborted(req.signal);
  const batchId = batchIdFor(req.idempotencyKey, req.submitter?.objectId);
  attributeTo(batchId);
  const now = ctx.now();
  const fresh: Manifest = {
    v: 1,
    batchId,
    state: 'ingesting',
    source: req.source,
    ...(req.sourceName ? { sourceName: req.sourceName } : {}),
    ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
    ...(req.callbackUrl ? { callbackUrl: req.callbackUrl } : {}),
    ...(req.submitter ? { submitter: req.submitter } : {}),
    ...(req.recipient ? { recipient: req.recipient } : {}),
    attempt: randomUUID(),
    bodySha256: summary.sha256,
    controls: summary.controls,
    submittedAt: new Date(now).toISOString(),
    transactions: summary.transactions,
    chunkSize: plan.size,
    ...(plan.piece < plan.size ? { chunkPiece: plan.piece } : {}),
    chunks: 0,
    queues: [],
    notification: 'pending',
    done: [],
    failed: [],
    ...(span.traceparent !== undefined ? { traceparent: span.traceparent } : {}),
  };
  const staleMs = ctx.claimStaleMs ?? STALE_INGEST_MS;
  const claim = await claimBatch(ctx.manifests, fresh, now, staleMs);
  if (claim.kind === 'replay') {
    const m = claim.manifest;
    const status = publicStatus(m) ?? 'accepted';
    // A replay may follow a kill between the accept and its wake-up (the 202 never went out):
    // wake a batch that shows no progress yet again. A duplicate wake-up costs an empty look at most.
    let notified = m.notification === 'sent';
    if (notified && m.state === 'accepted' && m.done.length + m.failed.length === 0)
      notified = await wakeAccepted(ctx, m);
    return {
      batchId,
      status,
      transactions: m.transactions,
      chunks: m.chunks,
      ...(m.controls ? { controlTotals: controlTotalsOf(m) } : {}),
      replayed: true,
      notified,
    };
  }
  const heartbeat = startHeartbeat({
    store: ctx.manifests,
    claim: claim.manifest,
    now: () => ctx.now(),
    warn: (msg) => ctx.log.warn(msg),
    intervalMs: heartbeatIntervalMs(staleMs),
  });
  try {
    // A take-over keeps the cut its claim recorded: pieces that do not make up those chunks are cut again.
    const chunks = keptChunks(summary.chunks, rule.piece, claim.manifest);
    const kept = chunks ? { chunks } : summary.chunks ? { pieces: summary.chunks } : undefined;
    return await writeAndAccept(ctx, req, { manifest: claim.manifest, etag: claim.etag, heartbeat, kept });
  } catch (e) {
    await heartbeat.stop();
    await abandon(ctx, claim.manifest, ensureError(e).message);
    if (e instanceof ValidationError || e instanceof AbortedError) throw e;
    throw new TransientError(
      `ingest of ${batchId} failed part-way and was rolled back; nothing was accepted: ${ensureError(e).message}`,
      undefined,
      { cause: e },
    );
  } finally {
    await heartbeat.stop();
  }
}

/**
 * The kept pieces as the manifest's chunks: runs of whole pieces, each piece one gzip member.
 * Undefined when they cannot be (another cut recorded by a taken-over claim): they are cut again.
 */
function keptChunks(pieces: EncodedChunk[] | undefined, piece: number, m: Manifest): EncodedChunk[] | undefined {
  const member = m.chunkPiece ?? m.chunkSize;
  if (!pieces || member !== piece || m.chunkSize % piece !== 0) return undefined;
  const per = m.chunkSize / piece;
  if (per === 1) return pieces;
  const out: EncodedChunk[] = [];
  for (let at = 0; at < pieces.length; at += per) out.push(joinPieces(out.length, pieces.slice(at, at + per)));
  return out;
}

/** What the claim gave this request to write under. */
interface OwnClaim {
  manifest: Manifest;
  etag: string;
  heartbeat: Heartbeat;
  /** What validation kept; without it the body is cut again. */
  kept: Kept | undefined;
}

async function writeAndAccept(ctx: IngestDeps, req: IngestRequest, claim: OwnClaim): Promise<IngestResult> {
  const { manifest: m, etag, heartbeat, kept } = claim;
  const { batchId } = m;
  const pointers = await writeChunks({
    blobs: ctx.blobs,
    names: ctx.names,
    manifest: m,
    body: { open: req.open, format: req.format, sha256: m.bodySha256 },
    kept,
    signal: req.signal,
  });
  // The last point of return: once pointers are out, finishing is cheaper than undoing.
  checkAborted(req.signal);

  const sends = new Pool(ENQUEUE_CONCURRENCY);
  for (const { queue, pointer } of pointers) {
    await sends.run(() => ctx.queues.send(queue, pointer));
  }
  await sends.drain();

  const touches = new Map<string, Required<Wake>>();
  for (const { queue, pointer } of pointers) {
    const t = touches.get(queue) ?? { queue, chunks: 0, payloadSize: 0 };
    t.chunks++;
    t.payloadSize += pointer.bytes;
    touches.set(queue, t);
  }
  const queues = [...touches.values()];

  // The watchdog check first: scheduled before the accept, it is there for a batch whose
  // wake-up a kill cuts off. If Service Bus is down, the accept records the notification as
  // pending and the sweep's recovery publishes both.
  let watchdog: string[] | undefined;
  let scheduled = true;
  const schedule = ctx.notifier.scheduleCheck({ v: 1, batchId, attempt: 1, settledBefore: 0 }).then(
    (s) => {
      // Recorded even without sequence numbers (a check sent to the backlog): recovery then knows a
      // check is on its way and sends only the wake-up, never a second check.
      watchdog = s.sequenceNumbers ?? [];
    },
    (e: unknown) => {
      scheduled = false;
      ctx.log.warn(
        `batch ${batchId}: watchdog check not scheduled, notification left pending for the sweep: ${ensureError(e).message}`,
      );
    },
  );
  // Indexed before it is accepted, so recovery can find it even if every event is lost (and its
  // submitter's listing has it from the 202 on); the writes go out with the schedule.
  await Promise.all([
    schedule,
    ctx.open.add(batchId),
    m.submitter && ctx.owners?.add(m.submitter, m.submittedAt, batchId),
  ]);
  const accept = (cur: Manifest): Manifest => ({
    ...cur,
    state: 'accepted',
    acceptedAt: new Date(ctx.now()).toISOString(),
    chunks: pointers.length,
    queues,
    notification: scheduled ? 'sent' : 'pending',
    ...(watchdog ? { watchdog } : {}),
  });
  // Usually nobody else has written; if an aggregator recorded chunks (or a heartbeat landed)
  // meanwhile, merge with it. A claim taken over by another request is left to that request.
  await heartbeat.stop();
  let accepted = accept(m);
  if ((await ctx.manifests.replace(accepted, { manifest: m, etag })) === undefined) {
    const updated = await ctx.manifests.update(batchId, (cur) =>
      isOwnClaim(cur, m.attempt) ? accept(cur) : undefined,
    );
    if (!updated || updated.manifest.state !== 'accepted')
      throw new Error(`manifest of ${batchId} left the ingesting state unexpectedly`);
    accepted = updated.manifest;
  }
  // Accepted before the wake-up, so a drainer on another instance finds the accept on its first
  // read. Work is enqueued before the event (no lost wake-up); the 202 waits for it, so a client
  // that got no 202 retries, and its replay wakes the batch again.
  const notified = scheduled && (await wakeAccepted(ctx, accepted));
  // A drain that was already running can settle a tiny batch before the accept; then nobody else will finalize.
  if (isSettled(accepted)) await ctx.finalizer.ifSettled(accepted);
  return {
    batchId,
    status: 'accepted',
    transactions: accepted.transactions,
    chunks: accepted.chunks,
    ...(accepted.controls ? { controlTotals: controlTotalsOf(accepted) } : {}),
    replayed: false,
    notified,
  };
}

/**
 * Publishes an accepted batch's WorkDetected events. A failed publish does not fail the batch:
 * its notification is set back to pending, and the sweep's recovery publishes it.
 */
async function wakeAccepted(ctx: IngestDeps, m: Manifest): Promise<boolean> {
  try {
    await ctx.notifier.wake(m.queues, m.batchId, m.traceparent);
    return true;
  } catch (e) {
    ctx.log.warn(
      `batch ${m.batchId}: WorkDetected publish failed, notification left pending for the sweep: ${ensureError(e).message}`,
    );
    try {
      await ctx.manifests.update(m.batchId, (cur) =>
        cur.state === 'accepted' && cur.notification === 'sent' ? { ...cur, notification: 'pending' } : undefined,
      );
    } catch (f) {
      // The batch is accepted and indexed: the sweep's stall check wakes it all the same.
      ctx.log.warn(`batch ${m.batchId}: could not record the pending notification: ${ensureError(f).message}`);
    }
    return false;
  }
}

async function abandon(ctx: IngestDeps, claim: Manifest, reason: string): Promise<void> {
  const { batchId } = claim;
  try {
    // Only our own claim: a request that took ours over is still working and must not be undone.
    await ctx.manifests.update(batchId, (cur) =>
      isOwnClaim(cur, claim.attempt) ? { ...cur, state: 'abandoned', error: reason } : undefined,
    );
  } catch (e) {
    ctx.log.error(`batch ${batchId}: could not mark the failed ingest abandoned: ${ensureError(e).message}`);
  }
}
