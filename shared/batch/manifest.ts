/**
 * The manifest, `batches/{batchId}/manifest.json`: the batch's one record of truth.
 * Every change is a read-modify-write under an ETag condition, so concurrent writers
 * (ingest, aggregators) never lose each other's updates.
 */
import type { Submitter } from '../auth/principal';
import { TransientError } from '../errors';
import type { OutboxEvent } from '../events/outbox';
import { isValidBatchId, layout, OPEN_PREFIX } from '../layout';
import type { Wake } from '../notify/events';
import { type BlobStore, type Clock, systemClock } from '../ports';
import { conflictDelay } from '../retry/backoff';
import type { BatchTimeline } from './timeline';

/** `ingesting` and `abandoned` are internal: a batch in them was never answered 202. */
export type BatchState = 'ingesting' | 'accepted' | 'completed' | 'failed' | 'abandoned';

export type PublicStatus = 'accepted' | 'processing' | 'completed' | 'failed';

export interface FailedChunk {
  chunk: number;
  reason: string;
}

export interface Manifest {
  v: 1;
  batchId: string;
  state: BatchState;
  source: 'http' | 'sweep';
  /** The incoming/ blob a swept batch came from. */
  sourceName?: string;
  idempotencyKey?: string;
  /** Who submitted it over HTTP with a token (a function key or the sweep records none). */
  submitter?: Submitter;
  /**
   * A random id per ingest request. Tells "our own create, retried after its response was
   * lost" from "another request's claim", and keeps a taken-over request from touching it.
   */
  attempt?: string;
  /** While `ingesting`: the last heartbeat of the request doing it (staleness is measured from here). */
  aliveAt?: string;
  bodySha256: string;
  submittedAt: string;
  acceptedAt?: string;
  /** The last time a chunk of this batch settled (done or failed). */
  progressAt?: string;
  completedAt?: string;
  /** submittedAt → completedAt, in ms. */
  latencyMs?: number;
  transactions: number;
  /** Transactions per chunk when this batch was cut (a take-over must cut identically). */
  chunkSize: number;
  /** Lines per gzip member of a chunk; absent: one member per chunk (versions before the chunk size rule). */
  chunkPiece?: number;
  chunks: number;
  /** The queues its chunks went to, each with its count and size: what ingest woke, and recovery wakes again. */
  queues: Required<Wake>[];
  /** `pending` until every WorkDetected event for the batch is published. */
  notification: 'pending' | 'sent';
  done: number[];
  failed: FailedChunk[];
  error?: string;
  /** The client's `Callback-Url` (an allowlisted origin), delivered to beside the operator's webhooks. */
  callbackUrl?: string;
  /**
   * The outbox: each completed/failed event with its deliveries, recorded by the very write that
   * made the batch terminal (see shared/events/outbox.ts).
   */
  events?: OutboxEvent[];
  /**
   * Sequence numbers of the watchdog check scheduled for it now, where the publisher hands them
   * back: once the batch is terminal the finalizer cancels it, so it never comes due for nothing.
   */
  watchdog?: string[];
  /** W3C trace context of the batch's ingest span: every later span of the batch is in its trace. */
  traceparent?: string;
  /** When its chunks were billed and folded, bounded (see timeline.ts); folded in by the progress writes. */
  timeline?: BatchTimeline;
}

export function isTerminal(m: Manifest): boolean {
  return m.state === 'completed' || m.state === 'failed';
}

export function isSettled(m: Manifest): boolean {
  return m.done.length + m.failed.length >= m.chunks;
}

export function publicStatus(m: Manifest): PublicStatus | undefined {
  return statusOf(m.state, m.done.length + m.failed.length);
}

/**
 * What a client sees of a batch in `state` with `settled` chunks done or failed: undefined while
 * it is internal. The status listing applies it to a manifest's metadata, without the manifest.
 */
export function statusOf(state: BatchState, settled: number): PublicStatus | undefined {
  switch (state) {
    case 'completed':
    case 'failed':
      return state;
    case 'accepted':
      return settled > 0 ? 'processing' : 'accepted';
    default:
      return undefined;
  }
}

export interface BatchStatusBody {
  batchId: string;
  status: PublicStatus;
  transactions: number;
  chunks: number;
  chunksDone: number;
  chunksFailed: number;
  submittedAt: string;
  completedAt?: string;
  error?: string;
  submitter?: Submitter;
}

/** The `GET /api/batches/{id}` body, or undefined for a batch that was never accepted. */
export function statusBody(m: Manifest): BatchStatusBody | undefined {
  const status = publicStatus(m);
  if (!status) return undefined;
  return {
    batchId: m.batchId,
    status,
    transactions: m.transactions,
    chunks: m.chunks,
    chunksDone: m.done.length,
    chunksFailed: m.failed.length,
    submittedAt: m.submittedAt,
    ...(m.completedAt ? { completedAt: m.completedAt } : {}),
    ...(m.error ? { error: m.error } : {}),
    ...(m.submitter ? { submitter: m.submitter } : {}),
  };
}

export interface VersionedManifest {
  manifest: Manifest;
  etag: string;
}

/** Return the changed manifest, or undefined to leave it as it is (it may do I/O first). */
export type ManifestChange = (current: Manifest) => Manifest | undefined | Promise<Manifest | undefined>;

/** Enough for many concurrent aggregators; past it the caller retries the message later. */
const MAX_CONFLICTS = 25;
/** Manifests whose last version this process saw it keeps (a few MB at most: most are a few hundred bytes). */
const MAX_KNOWN = 256;
const MAX_KNOWN_CHARS = 4 * 1024 * 1024;

/**
 * The last version of each recent manifest this process read or wrote, so that `update` can
 * write on it at once: the write's If-Match is what proves it still current, as it proves a
 * version just read. On one instance (a small batch ingested and reduced by the same process)
 * that saves the read of every read-modify-write; a version another process has since replaced
 * costs one refused write, then the read as before.
 */
class KnownVersions {
  private readonly byId = new Map<string, { text: string; etag: string }>();
  private chars = 0;

  get(batchId: string): { text: string; etag: string } | undefined {
    return this.byId.get(batchId);
  }

  set(batchId: string, text: string, etag: string): void {
    this.forget(batchId);
    if (text.length > MAX_KNOWN_CHARS / 4) return;
    this.byId.set(batchId, { text, etag });
    this.chars += text.length;
    // Oldest first out (a Map iterates in insertion order).
    for (const [id] of this.byId) {
      if (this.byId.size <= MAX_KNOWN && this.chars <= MAX_KNOWN_CHARS) break;
      this.forget(id);
    }
  }

  forget(batchId: string): void {
    const had = this.byId.get(batchId);
    if (!had) return;
    this.chars -= had.text.length;
    this.byId.delete(batchId);
  }
}

/**
 * Reads and conditionally writes manifests. `update` is the only way to change one: it
 * re-reads and re-applies the change when another writer got there first (ETag 412).
 */
export class ManifestStore {
  private readonly known = new KnownVersions();

  constructor(
    private readonly blobs: BlobStore,
    private readonly clock: Pick<Clock, 'sleep' | 'random'> = systemClock,
  ) {}

  async read(batchId: string): Promise<VersionedManifest | undefined> {
    const got = await this.blobs.read(layout.manifest(batchId));
    if (!got) {
      this.known.forget(batchId);
      return undefined;
    }
    const text = got.body.toString('utf8');
    this.known.set(batchId, text, got.etag);
    return { manifest: JSON.parse(text) as Manifest, etag: got.etag };
  }

  /** Creates the manifest only if none exists; undefined means one already does. */
  async create(m: Manifest): Promise<string | undefined> {
    return this.write(m, { ifNoneMatch: '*' });
  }

  /** Replaces the manifest if it is still at `etag`; undefined means it changed meanwhile. */
  async replace(m: Manifest, etag: string): Promise<string | undefined> {
    return this.write(m, { ifMatch: etag });
  }

  /**
   * Applies `change` atomically. Undefined when the manifest does not exist. The first attempt
   * starts from the version this process last saw, when it has one (KnownVersions).
   */
  async update(batchId: string, change: ManifestChange): Promise<VersionedManifest | undefined> {
    const known = this.known.get(batchId);
    // Only a write proves the known version current: a change that leaves it as it is (a
    // decision taken on what may be an old version) is decided again on a fresh read.
    const next = known && (await change(JSON.parse(known.text) as Manifest));
    if (known && next) {
      // Refused (or any failure): the reading path below decides afresh.
      const etag = await this.replace(next, known.etag).catch(() => undefined);
      if (etag !== undefined) return { manifest: next, etag };
    }
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      const current = await this.read(batchId);
      if (!current) return undefined;
      const next = await change(structuredClone(current.manifest));
      if (!next) return current;
      const etag = await this.replace(next, current.etag);
      if (etag !== undefined) return { manifest: next, etag };
      // Lost the race to another writer: back off a little so we don't collide again.
      await this.clock.sleep(conflictDelay(attempt, 20, () => this.clock.random()));
    }
    throw new TransientError(`manifest ${batchId} is contended: ${MAX_CONFLICTS} conflicting writes in a row`);
  }

  private async write(m: Manifest, condition: { ifNoneMatch: '*' } | { ifMatch: string }): Promise<string | undefined> {
    const text = JSON.stringify(m);
    const etag = await this.blobs.write(layout.manifest(m.batchId), Buffer.from(text, 'utf8'), {
      contentType: 'application/json',
      condition,
      metadata: manifestSummary(m),
    });
    if (etag) this.known.set(m.batchId, text, etag);
    else this.known.forget(m.batchId);
    return etag;
  }
}

/**
 * The manifest's progress as blob metadata, written in the same request: one listing of
 * `batches/` then shows every batch's state without reading a single manifest (batch-list.ts).
 */
export function manifestSummary(m: Manifest): Record<string, string> {
  return {
    state: m.state,
    transactions: String(m.transactions),
    chunks: String(m.chunks),
    done: String(m.done.length),
    failed: String(m.failed.length),
    submittedat: m.submittedAt,
    ...(m.completedAt ? { completedat: m.completedAt } : {}),
    ...(m.latencyMs !== undefined ? { latencyms: String(m.latencyMs) } : {}),
    // Metadata values are ASCII header text: the reason travels percent-encoded, and short.
    ...(m.error ? { error: encodeURIComponent(m.error.slice(0, 300)) } : {}),
    ...(m.submitter ? { submitter: encodeURIComponent(JSON.stringify(m.submitter)) } : {}),
  };
}

/*
 * The index of open batches: `batches/open/{batchId}`, written before a batch is accepted and
 * removed once it is completed or failed. It lets recovery find unfinished work without any
 * help from Service Bus, and costs one list request to read when nothing is open.
 */
export class OpenBatches {
  constructor(
    private readonly blobs: BlobStore,
    private readonly clock: Pick<Clock, 'sleep' | 'random'> = systemClock,
  ) {}

  /** Before the batch is accepted: an accepted batch is never missing from the index. */
  async add(batchId: string): Promise<void> {
    await this.blobs.write(layout.openBatch(batchId), Buffer.alloc(0), { contentType: 'application/octet-stream' });
  }

  /** After the batch is terminal; a crash before this leaves a marker that recovery removes. */
  async remove(batchId: string): Promise<void> {
    await this.blobs.remove(layout.openBatch(batchId));
  }

  /** Open batch ids, at most `max`; names that are not batch ids are skipped, never trusted. */
  async list(max: number): Promise<string[]> {
    const out: string[] = [];
    for await (const item of this.blobs.list('batches', OPEN_PREFIX)) {
      const id = item.name.slice(OPEN_PREFIX.length);
      if (isValidBatchId(id)) out.push(id);
      if (out.length >= max) break;
    }
    return out;
  }
}
