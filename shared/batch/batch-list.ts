/**
 * Open and recently finished batches, for the status page. Every manifest carries its progress
 * as blob metadata (manifest.ts), so one listing request per 5,000 batches answers it without
 * reading a manifest. The scan is bounded; behind the `BatchDirectory` seam an index of open
 * batches can later serve `open` in one request.
 */
import type { Submitter } from '../auth/principal';
import { MANIFEST_NAME, OPEN_PREFIX } from '../layout';
import type { BlobStore } from '../ports';
import type { BatchState } from './batch-state';
import { type BatchStatus, batchStatus, statusOf } from './batch-status';
import type { ManifestStore } from './manifest-store';

export interface BatchSummary extends BatchStatus {
  /** submittedAt → completedAt, once finished. */
  latencyMs?: number;
}

export interface BatchListing {
  /** Accepted and not finished, newest first. */
  open: BatchSummary[];
  /** Completed or failed, latest completion first. */
  recent: BatchSummary[];
  /** Every batch the scan saw, by public status (the lists above are cut to their limits). */
  counts: Record<BatchStatus['status'], number>;
  /** How many manifests the scan saw. */
  scanned: number;
  /** The scan stopped at its limit: older or later-listed batches may be missing. */
  truncated: boolean;
  source: 'manifest-listing';
  /**
   * Completed or failed batches that keep their open-batch marker (an event delivery is pending, or
   * recovery has a spare marker to remove), latest completion first: up to `limits.open`, and how many.
   */
  delivering: { batchIds: string[]; total: number };
}

export interface ListLimits {
  open: number;
  recent: number;
}

export interface BatchDirectory {
  list(limits: ListLimits): Promise<BatchListing>;
}

export interface ManifestListingOptions {
  /** Manifests one listing may scan (5,000 per request). @defaultValue 20000 */
  scanLimit?: number;
  /** Manifests written before summaries existed, read whole (one request each). @defaultValue 20 */
  legacyReads?: number;
}

/** A summary from listing metadata, or undefined when the manifest predates summaries. */
export function summaryFromMetadata(
  batchId: string,
  md: Record<string, string>,
): BatchSummary | undefined | 'internal' {
  const state = md.state;
  const num = (k: string): number => Number(md[k] ?? 'NaN');
  if (state === undefined || md.submittedat === undefined || !Number.isFinite(num('chunks'))) return undefined;
  const done = num('done');
  const failed = num('failed');
  // An unknown state string is internal too: statusOf knows only the public ones.
  const status = statusOf(state as BatchState, done + failed);
  if (status === undefined) return 'internal';
  return {
    batchId,
    status,
    transactions: num('transactions'),
    chunks: num('chunks'),
    chunksDone: done,
    chunksFailed: failed,
    submittedAt: md.submittedat,
    ...(md.completedat ? { completedAt: md.completedat } : {}),
    ...(md.latencyms !== undefined ? { latencyMs: Number(md.latencyms) } : {}),
    ...(md.error !== undefined ? { error: decodeError(md.error) } : {}),
    ...submitterFrom(md.submitter),
  };
}

/** The submitter as manifestSummary wrote it; anything unreadable is left out, never guessed. */
function submitterFrom(v: string | undefined): { submitter?: Submitter } {
  if (v === undefined) return {};
  try {
    const s = JSON.parse(decodeURIComponent(v)) as Partial<Submitter>;
    if (typeof s.objectId !== 'string') return {};
    return {
      submitter: {
        objectId: s.objectId,
        ...(typeof s.appId === 'string' ? { appId: s.appId } : {}),
        ...(typeof s.name === 'string' ? { name: s.name } : {}),
      },
    };
  } catch {
    return {};
  }
}

function decodeError(v: string): string {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

const newestFirst = (key: 'submittedAt' | 'completedAt') => (a: BatchSummary, b: BatchSummary) =>
  (b[key] ?? '').localeCompare(a[key] ?? '');

export class ManifestListing implements BatchDirectory {
  private readonly scanLimit: number;
  private readonly legacyReads: number;

  constructor(
    private readonly blobs: BlobStore,
    private readonly manifests: ManifestStore,
    options: ManifestListingOptions = {},
  ) {
    this.scanLimit = options.scanLimit ?? 20_000;
    this.legacyReads = options.legacyReads ?? 20;
  }

  async list(limits: ListLimits): Promise<BatchListing> {
    const found: BatchSummary[] = [];
    const legacy: string[] = [];
    let scanned = 0;
    let truncated = false;
    const markers = new Set<string>();
    for await (const blob of this.blobs.list('batches', undefined, { metadata: true })) {
      // The open-batch index is in the same listing: a terminal batch with a marker is delivering its event.
      if (blob.name.startsWith(OPEN_PREFIX)) markers.add(blob.name.slice(OPEN_PREFIX.length));
      const m = MANIFEST_NAME.exec(blob.name);
      if (!m?.[1]) continue; // the open-batch index and other records (the pattern is a valid batch id)
      if (scanned >= this.scanLimit) {
        truncated = true;
        break;
      }
      scanned++;
      const s = summaryFromMetadata(m[1], blob.metadata ?? {});
      if (s === undefined) legacy.push(m[1]);
      else if (s !== 'internal') found.push(s);
    }
    for (const batchId of legacy.slice(0, this.legacyReads)) {
      const got = await this.manifests.read(batchId);
      const body = got && batchStatus(got.manifest);
      if (got && body)
        found.push({ ...body, ...(got.manifest.latencyMs !== undefined ? { latencyMs: got.manifest.latencyMs } : {}) });
    }
    if (legacy.length > this.legacyReads) truncated = true;
    const open = found
      .filter((b) => b.status === 'accepted' || b.status === 'processing')
      .sort(newestFirst('submittedAt'));
    const recent = found
      .filter((b) => b.status === 'completed' || b.status === 'failed')
      .sort(newestFirst('completedAt'));
    const counts = { accepted: 0, processing: 0, completed: 0, failed: 0 };
    for (const b of found) counts[b.status]++;
    const delivering = recent.filter((b) => markers.has(b.batchId)).map((b) => b.batchId);
    return {
      open: open.slice(0, limits.open),
      recent: recent.slice(0, limits.recent),
      counts,
      scanned,
      truncated,
      source: 'manifest-listing',
      delivering: { batchIds: delivering.slice(0, limits.open), total: delivering.length },
    };
  }
}
