/**
 * GET /api/batches: a page of the batches the caller may see, newest first. A submitter (a token
 * with Batches.Submit and not Batches.Read) gets its own batches from the owner index: one listing
 * request under its prefix plus one metadata read per batch shown, whatever the other submitters
 * sent. A reader (Batches.Read, or a function-key holder) gets every batch, from the same bounded
 * metadata scan of `batches/` that the status report makes (one request per 5,000 entries).
 */
import { type Principal } from '../auth/principal';
import { layout, MANIFEST_NAME, NEWEST_FIRST_KEY, newestFirstKey } from '../layout';
import type { BlobStore } from '../ports';
import { type BatchSummary, summaryFromMetadata } from './batch-list';
import type { SubmitterIndex } from './submitter-index';

export interface BatchPageQuery {
  /** 1–100. @defaultValue 20 */
  limit: number;
  /** The `next` of the previous page. */
  cursor?: string;
}

export interface BatchPage {
  /** `own`: the caller's batches only (a submitter); `all`: every batch (a reader, a key holder). */
  scope: 'own' | 'all';
  batches: BatchSummary[];
  /** Pass as `cursor` for the next page; absent on the last one. */
  next?: string;
  /** `all` only: the scan stopped at its bound, so older batches may be missing. */
  truncated?: boolean;
}

export const PAGE_LIMITS = { default: 20, max: 100 } as const;
const SCAN_LIMIT = 20_000;

/** A cursor is a key this app made (newestFirstKey); anything else is refused before any request. */
export function isCursor(value: string): boolean {
  return NEWEST_FIRST_KEY.test(value);
}

export class BatchPages {
  constructor(
    private readonly blobs: BlobStore,
    private readonly owners: SubmitterIndex,
    private readonly scanLimit = SCAN_LIMIT,
  ) {}

  page(viewer: Principal, q: BatchPageQuery): Promise<BatchPage> {
    if (viewer.roles.has('Batches.Read')) return this.all(q);
    // A key holder without Batches.Read (PUSHDRAIN_AUTH_KEY_ROLES) has no identity to narrow to.
    if (viewer.kind === 'key') return Promise.resolve({ scope: 'own', batches: [] });
    // authorize() let only Batches.Submit through: a token holder, isolated to its own batches.
    return this.own(viewer.submitter.objectId, q);
  }

  private async own(objectId: string, q: BatchPageQuery): Promise<BatchPage> {
    const entries = await this.owners.newest(objectId, q.limit + 1, q.cursor);
    const shown = entries.slice(0, q.limit);
    const found = await Promise.all(
      shown.map(async ({ batchId }) => {
        const info = await this.blobs.info(layout.manifest(batchId));
        const s = info && summaryFromMetadata(batchId, info.metadata);
        // The index is ours, but the manifest decides: only a public batch that names this owner.
        return s && s !== 'internal' && s.submitter?.objectId === objectId ? s : undefined;
      }),
    );
    const last = shown.at(-1);
    return {
      scope: 'own',
      batches: found.filter((s): s is BatchSummary => s !== undefined),
      ...(entries.length > q.limit && last ? { next: last.key } : {}),
    };
  }

  private async all(q: BatchPageQuery): Promise<BatchPage> {
    const found: { key: string; summary: BatchSummary }[] = [];
    let scanned = 0;
    let truncated = false;
    for await (const blob of this.blobs.list('batches', undefined, { metadata: true })) {
      const m = MANIFEST_NAME.exec(blob.name);
      if (!m?.[1]) continue;
      if (scanned++ >= this.scanLimit) {
        truncated = true;
        break;
      }
      const s = summaryFromMetadata(m[1], blob.metadata ?? {});
      if (s === undefined || s === 'internal') continue;
      const key = newestFirstKey(s.submittedAt, s.batchId);
      if (q.cursor === undefined || key > q.cursor) found.push({ key, summary: s });
    }
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const shown = found.slice(0, q.limit);
    const last = shown.at(-1);
    return {
      scope: 'all',
      batches: shown.map((f) => f.summary),
      ...(found.length > q.limit && last ? { next: last.key } : {}),
      ...(truncated ? { truncated } : {}),
    };
  }
}
