/**
 * The timer path: batch files dropped in `incoming/` are ingested exactly as HTTP bodies
 * are, then moved to `archive/`; a rejected file goes to `rejected/` with `{name}.error.json`
 * beside it. Bounded per run; a file that fails transiently stays for the next run.
 */
import { createHash } from 'node:crypto';

import type { ContainerClient } from '@azure/storage-blob';

import { type Renotified, renotifyPending } from '../batch/pending-notifications';
import { ensureError, ValidationError } from '../errors';
import { type BodySource, inflateLimited, limited } from '../ingest/body';
import { ingest, type IngestResult } from '../ingest/ingest';
import type { BodyFormat } from '../ingest/records';
import type { PipelineContext } from '../pipeline/context';
import { writeBlob } from '../storage/blob-io';

export type SweepOutcome =
  | { name: string; kind: 'ingested'; result: IngestResult }
  | { name: string; kind: 'rejected'; error: string }
  | { name: string; kind: 'retry-later'; error: string };

const NAME = /^[A-Za-z0-9._-]{1,200}$/;

/** Format from the file name: `.ndjson`/`.jsonl` or `.json`, optionally `.gz`. */
export function formatOf(name: string): { format: BodyFormat; gzip: boolean } | undefined {
  const gzip = name.endsWith('.gz');
  const base = gzip ? name.slice(0, -3) : name;
  if (base.endsWith('.ndjson') || base.endsWith('.jsonl')) return { format: 'ndjson', gzip };
  if (base.endsWith('.json')) return { format: 'json', gzip };
  return undefined;
}

function blobSource(container: ContainerClient, name: string, gzip: boolean, maxBytes: number): BodySource {
  return () => {
    const raw = async function* (): AsyncGenerator<Buffer> {
      const res = await container.getBlockBlobClient(name).download();
      for await (const part of res.readableStreamBody as AsyncIterable<Buffer>) yield part;
    };
    return gzip ? inflateLimited(raw(), maxBytes) : limited(raw(), maxBytes);
  };
}

async function move(from: ContainerClient, to: ContainerClient, name: string): Promise<void> {
  // Copy Blob within one account is authorised by the destination's credential (works with
  // managed identity, unlike Copy From URL). Copy then delete: a crash in between leaves the
  // file in both places, and the next run finds the same batch (same idempotency key).
  const poller = await to.getBlockBlobClient(name).beginCopyFromURL(from.getBlockBlobClient(name).url, { intervalInMs: 200 });
  await poller.pollUntilDone();
  await from.getBlockBlobClient(name).deleteIfExists();
}

/** One timer run: re-notify batches whose events were lost at ingest, then ingest new files. */
export async function sweep(ctx: PipelineContext): Promise<{ renotified: Renotified[]; files: SweepOutcome[] }> {
  const renotified = await renotifyPending(ctx, ctx.tuning.sweepMaxFiles);
  return { renotified, files: await sweepIncoming(ctx) };
}

export async function sweepIncoming(ctx: PipelineContext): Promise<SweepOutcome[]> {
  const incoming = ctx.container('incoming');
  const outcomes: SweepOutcome[] = [];
  const files: { name: string; etag: string }[] = [];
  for await (const item of incoming.listBlobsFlat()) {
    files.push({ name: item.name, etag: item.properties.etag ?? '' });
    if (files.length >= ctx.tuning.sweepMaxFiles) break;
  }
  for (const f of files) outcomes.push(await sweepOne(ctx, incoming, f.name, f.etag));
  return outcomes;
}

async function sweepOne(ctx: PipelineContext, incoming: ContainerClient, name: string, etag: string): Promise<SweepOutcome> {
  const kind = formatOf(name);
  const reject = async (message: string, details: unknown[] = []): Promise<SweepOutcome> => {
    const report = { error: 'invalid_batch', file: name, message, details, rejectedAt: new Date(ctx.now()).toISOString() };
    await writeBlob(ctx.container('rejected').getBlockBlobClient(`${name}.error.json`), Buffer.from(JSON.stringify(report, null, 2)), { contentType: 'application/json' });
    await move(incoming, ctx.container('rejected'), name);
    ctx.log.warn(`incoming/${name} rejected: ${message}`);
    return { name, kind: 'rejected', error: message };
  };
  if (!NAME.test(name)) return reject('file name must be 1-200 characters of A-Z a-z 0-9 . _ -');
  if (!kind) return reject('file name must end in .ndjson, .jsonl or .json (optionally .gz)');
  try {
    // Name and ETag make the idempotency key: re-sweeping a file that was ingested but not
    // yet archived finds the same batch, while a new file under a reused name is a new batch.
    const result = await ingest(ctx, {
      open: blobSource(incoming, name, kind.gzip, ctx.tuning.maxInflatedBytes),
      format: kind.format,
      idempotencyKey: `incoming:${createHash('sha256').update(`${name}\n${etag}`).digest('hex')}`,
      source: 'sweep',
      sourceName: name,
    });
    await move(incoming, ctx.container('archive'), name);
    ctx.log.info(`incoming/${name} ingested as batch ${result.batchId} (${result.transactions} transactions)`);
    return { name, kind: 'ingested', result };
  } catch (e) {
    // A claim still in progress (an earlier sweep that died moments ago) is not the file's fault.
    if (e instanceof ValidationError && e.retryAfterSeconds === undefined) return reject(e.message, e.details);
    const error = ensureError(e).message;
    ctx.log.warn(`incoming/${name} left for the next sweep: ${error}`);
    return { name, kind: 'retry-later', error };
  }
}
