/**
 * The timer path: recovery of open batches (watchdog/recovery.ts), then batch files dropped
 * in `incoming/`, ingested exactly as HTTP bodies are, then moved to `archive/`; a rejected
 * file goes to `rejected/` with `{name}.error.json` beside it. Bounded per run; a file that
 * fails transiently stays for the next run. Each file first waits for room in the instance's
 * memory budget, counted as POST /api/batches counts a body (ingest-memory.ts): a POST that
 * finds no room is refused, but a file is safe where it lies, so the sweep waits its turn.
 */
import { createHash } from 'node:crypto';

import { ensureError, ValidationError } from '../errors';
import { type BodySource, inflateLimited, limited } from '../ingest/body';
import type { Ingestor, IngestResult } from '../ingest/ingest';
import { ingestBytes } from '../ingest/ingest-memory';
import type { BodyFormat } from '../ingest/records';
import { layout } from '../layout';
import type { BlobStore, ListedBlob, Logger } from '../ports';
import type { MemoryBudget } from '../util/memory-budget';
import type { Recovery, RecoveryAction } from '../watchdog/recovery';

export type SweepOutcome =
  | { name: string; kind: 'ingested'; result: IngestResult }
  | { name: string; kind: 'rejected'; error: string }
  | { name: string; kind: 'retry-later'; error: string };

export interface SweepResult {
  recovered: RecoveryAction[];
  files: SweepOutcome[];
}

const NAME = /^[A-Za-z0-9._-]{1,200}$/;

/** Format from the file name: `.ndjson`/`.jsonl` or `.json`, optionally `.gz`. */
function formatOf(name: string): { format: BodyFormat; gzip: boolean } | undefined {
  const gzip = name.endsWith('.gz');
  const base = gzip ? name.slice(0, -3) : name;
  if (base.endsWith('.ndjson') || base.endsWith('.jsonl')) return { format: 'ndjson', gzip };
  if (base.endsWith('.json')) return { format: 'json', gzip };
  return undefined;
}

export interface SweepDeps {
  blobs: BlobStore;
  ingestor: Ingestor;
  /** The process's budget, shared with HTTP ingests and maps. */
  memory: Pick<MemoryBudget, 'reserve'>;
  recovery: Recovery;
  /** An open batch with no progress for this long is repaired. */
  stallMs: number;
  /** Files handled per run. */
  maxFiles: number;
  maxInflatedBytes: number;
  now: () => number;
  log: Logger;
}

export class Sweeper {
  constructor(private readonly deps: SweepDeps) {}

  /** One timer run: recover open batches that lost their events or stalled, then ingest new files. */
  async run(): Promise<SweepResult> {
    const recovered = await this.deps.recovery.run({ stallMs: this.deps.stallMs }, { drainHere: true });
    return { recovered, files: await this.incoming() };
  }

  async incoming(): Promise<SweepOutcome[]> {
    const files: ListedBlob[] = [];
    for await (const item of this.deps.blobs.list('incoming')) {
      files.push(item);
      if (files.length >= this.deps.maxFiles) break;
    }
    const outcomes: SweepOutcome[] = [];
    for (const f of files) outcomes.push(await this.one(f));
    return outcomes;
  }

  private async one({ name, etag, size }: ListedBlob): Promise<SweepOutcome> {
    const { blobs, log } = this.deps;
    const kind = formatOf(name);
    const reject = async (message: string, details: unknown[] = []): Promise<SweepOutcome> => {
      const report = {
        error: 'invalid_batch',
        file: name,
        message,
        details,
        rejectedAt: new Date(this.deps.now()).toISOString(),
      };
      await blobs.write(layout.rejection(name), Buffer.from(JSON.stringify(report, null, 2)), {
        contentType: 'application/json',
      });
      await this.move(name, 'rejected');
      log.warn(`incoming/${name} rejected: ${message}`);
      return { name, kind: 'rejected', error: message };
    };
    if (!NAME.test(name)) return reject('file name must be 1-200 characters of A-Z a-z 0-9 . _ -');
    if (!kind) return reject('file name must end in .ndjson, .jsonl or .json (optionally .gz)');
    // A file is not held to the HTTP body cap, only to the inflation cap.
    const { maxInflatedBytes } = this.deps;
    const limits = { maxBodyBytes: maxInflatedBytes, maxInflatedBytes };
    const release = await this.deps.memory.reserve(ingestBytes(size, kind.gzip, limits));
    try {
      // Name and ETag make the idempotency key: re-sweeping a file that was ingested but not
      // yet archived finds the same batch, while a new file under a reused name is a new batch.
      const result = await this.deps.ingestor.ingest({
        open: this.source(name, kind.gzip),
        format: kind.format,
        idempotencyKey: `incoming:${createHash('sha256').update(`${name}\n${etag}`).digest('hex')}`,
        source: 'sweep',
        sourceName: name,
      });
      await this.move(name, 'archive');
      log.info(`incoming/${name} ingested as batch ${result.batchId} (${result.transactions} transactions)`);
      return { name, kind: 'ingested', result };
    } catch (e) {
      // A claim still in progress (an earlier sweep that died moments ago) is not the file's fault.
      if (e instanceof ValidationError && e.retryAfterSeconds === undefined) return reject(e.message, e.details);
      const error = ensureError(e).message;
      log.warn(`incoming/${name} left for the next sweep: ${error}`);
      return { name, kind: 'retry-later', error };
    } finally {
      release();
    }
  }

  private source(name: string, gzip: boolean): BodySource {
    const ref = layout.file('incoming', name);
    return () =>
      gzip
        ? inflateLimited(this.deps.blobs.stream(ref), this.deps.maxInflatedBytes)
        : limited(this.deps.blobs.stream(ref), this.deps.maxInflatedBytes);
  }

  /** Copy then delete: a crash in between leaves the file in both places, and the next run finds the same batch (same idempotency key). */
  private async move(name: string, to: 'archive' | 'rejected'): Promise<void> {
    const from = layout.file('incoming', name);
    await this.deps.blobs.copy(from, layout.file(to, name));
    await this.deps.blobs.remove(from);
  }
}
