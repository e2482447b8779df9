/**
 * `pushdrain submit FILE|-`: read the batch, gzip it, upload it with an Idempotency-Key derived
 * from its content (a re-run returns the same batch instead of a second one), then follow the
 * batch's chunks to the end and print the totals and where the report is.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';

import type { BatchStatusBody } from '../../functions/batch-status-body';
import type { Report } from '../../shared/billing/report';
import { type ApiClient, CliError, type ErrorBody, exitFor, parseBody } from './client';
import { EXIT } from './exit-codes';
import { bytes, duration, money, num, type Painter, painter, progressBar } from './output';
import { nextPollMs } from './poll-schedule';

export interface SubmitOptions {
  format?: 'ndjson' | 'json';
  idempotencyKey?: string | false;
  /** Sent as `Callback-Url`: the server checks it against PUSHDRAIN_CALLBACK_ORIGINS. */
  callbackUrl?: string;
  wait: boolean;
  timeoutSeconds: number;
  /** The shortest wait between two looks at the batch, ms (see poll-schedule.ts). */
  pollMs: number;
  json: boolean;
  progress: boolean;
}

export interface Accepted {
  batchId: string;
  status: string;
  transactions: number;
  chunks: number;
  replayed: boolean;
}

export interface SubmitOutcome {
  accepted: Accepted;
  final?: BatchStatusBody;
  report?: Report;
  exitCode: number;
}

const MEDIA = { ndjson: 'application/x-ndjson', json: 'application/json' } as const;

async function readInput(file: string): Promise<Buffer> {
  if (file !== '-') {
    try {
      return await readFile(file);
    } catch (e) {
      throw new CliError(`cannot read ${file}: ${(e as Error).message}`, EXIT.error);
    }
  }
  const parts: Buffer[] = [];
  for await (const part of process.stdin as AsyncIterable<Buffer>) parts.push(part);
  return Buffer.concat(parts);
}

/** From the name (`.json`, `.ndjson`, `.jsonl`, optionally `.gz`), else from the first character. */
export function detectFormat(name: string, content: Buffer): 'ndjson' | 'json' {
  const n = name.toLowerCase().replace(/\.gz$/, '');
  if (n.endsWith('.ndjson') || n.endsWith('.jsonl')) return 'ndjson';
  if (n.endsWith('.json')) return 'json';
  const first = content.subarray(0, 4096).toString('utf8').trimStart()[0];
  return first === '[' ? 'json' : 'ndjson';
}

/** `sha256-<hex>` of the uncompressed content: the same data gives the same key, however it was compressed. */
export function contentKey(content: Buffer): string {
  return `sha256-${createHash('sha256').update(content).digest('hex')}`;
}

export function describeRejection(body: ErrorBody | undefined, status: number): string[] {
  const lines = [`rejected (HTTP ${status}${body?.error ? `, ${body.error}` : ''}): ${body?.message ?? 'no details'}`];
  for (const d of (body?.details ?? []).slice(0, 20)) {
    // A problem of the whole line (malformed JSON) names no field: no empty slot for one.
    const where = [d.line > 0 ? `line ${d.line}` : 'request', d.field].filter((p) => p !== '').join(', ');
    lines.push(`  ${where}: ${d.message}`);
  }
  const more = (body?.details?.length ?? 0) - 20;
  if (more > 0) lines.push(`  … and ${more} more`);
  return lines;
}

export async function submit(
  client: ApiClient,
  file: string,
  o: SubmitOptions,
  paint: Painter,
): Promise<SubmitOutcome> {
  // Sign-in first (a device code prompt, --verbose's "acting as"), before any progress is drawn.
  await client.prepare();
  const raw = await readInput(file);
  const gzipped = raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b;
  const content = gzipped ? await promisify(gunzip)(raw) : raw;
  const format = o.format ?? detectFormat(file === '-' ? '' : basename(file), content);
  const body = gzipped ? raw : await promisify(gzip)(raw);
  const key = o.idempotencyKey === false ? undefined : (o.idempotencyKey ?? contentKey(content));
  const say = (line: string): void => {
    if (!o.json) process.stderr.write(`${line}\n`);
  };
  // Progress and notes go to stderr, so their colour follows stderr, not stdout.
  const note = painter(process.stderr);
  say(
    `${file === '-' ? 'stdin' : file}: ${bytes(content.length)} ${format}, ${bytes(body.length)} gzip${key ? `, Idempotency-Key ${key.slice(0, 19)}…` : ''}`,
  );

  const accepted = await upload(client, body, format, key, o, say);
  say(
    `${accepted.replayed ? 'already submitted (same content): ' : 'accepted: '}batch ${note('bold', accepted.batchId)}, ${num(accepted.transactions)} transactions in ${num(accepted.chunks)} chunks`,
  );
  if (!o.wait) return { accepted, exitCode: EXIT.ok };

  const final = await follow(client, accepted, o);
  if (final.status === 'failed') {
    say(note('red', `batch ${final.batchId} failed: ${final.error ?? 'no reason recorded'}`));
    say(`after fixing the cause: pushdrain redrive --batch ${final.batchId}`);
    return { accepted, final, exitCode: EXIT.failed };
  }
  if (final.status !== 'completed') {
    say(
      note(
        'yellow',
        `batch ${final.batchId} is still ${final.status} after ${o.timeoutSeconds} s (${final.chunksDone}/${final.chunks} chunks); follow it with: pushdrain status ${final.batchId}`,
      ),
    );
    return { accepted, final, exitCode: EXIT.notReady };
  }
  const report = await client.json<Report>(`report of ${final.batchId}`, `/api/batches/${final.batchId}/report`);
  if (!o.json) {
    const latency = final.completedAt ? Date.parse(final.completedAt) - Date.parse(final.submittedAt) : undefined;
    console.log(
      `${paint('green', 'completed')}: batch ${final.batchId}, ${num(final.transactions)} transactions in ${num(final.chunks)} chunks, ${duration(latency)} from submission`,
    );
    console.log(
      `totals: ${report.totals.map((t) => `${t.currency} ${money(t.total, t.currency)} incl. tax ${money(t.tax, t.currency)} (${num(t.transactions)} tx)`).join(' · ')}`,
    );
    console.log(
      `report: ${client.url(`/api/batches/${final.batchId}/report`)}  (CSV: pushdrain report ${final.batchId} --csv -o ${final.batchId}.csv)`,
    );
  }
  return { accepted, final, report, exitCode: EXIT.ok };
}

async function upload(
  client: ApiClient,
  body: Buffer,
  format: 'ndjson' | 'json',
  key: string | undefined,
  o: SubmitOptions,
  say: (l: string) => void,
): Promise<Accepted> {
  const headers: Record<string, string> = {
    'Content-Type': MEDIA[format],
    'Content-Encoding': 'gzip',
    ...(key ? { 'Idempotency-Key': key } : {}),
    ...(o.callbackUrl !== undefined ? { 'Callback-Url': o.callbackUrl } : {}),
  };
  // Bounded: Retry-After answers (ingest in progress, 503) are honoured a few times.
  for (let attempt = 1; ; attempt++) {
    const bar = progressBar('upload', 'bytes', o.progress);
    bar.start(body.length, 0);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      bar.stop();
    };
    const res = await client
      .upload('/api/batches', body, headers, (sent) => {
        bar.update(sent);
        if (sent < body.length) return;
        // Every byte is handed over; the 202 comes once the app has validated and chunked it all.
        finish();
        say('uploaded; the app is validating and chunking the batch…');
      })
      .finally(finish);
    if (res.status === 202) {
      const b = parseBody(res.text) as Omit<Accepted, 'replayed'>;
      return { ...b, replayed: res.headers.get('idempotent-replayed') === 'true' };
    }
    const retryAfter = Number(res.headers.get('retry-after') ?? 'NaN');
    if (
      (res.status === 503 || res.status === 409 || res.status === 429) &&
      Number.isFinite(retryAfter) &&
      attempt < 5
    ) {
      say(`HTTP ${res.status}, retrying in ${retryAfter} s (attempt ${attempt} of 5)`);
      await new Promise((r) => setTimeout(r, Math.min(60, retryAfter) * 1000));
      continue;
    }
    const err = parseBody(res.text) as ErrorBody | undefined;
    const lines =
      exitFor(res.status) === EXIT.rejected
        ? describeRejection(err, res.status)
        : [`HTTP ${res.status}: ${err?.message ?? res.text.slice(0, 200)}`];
    throw new CliError(lines.join('\n'), exitFor(res.status), err, res.status);
  }
}

/**
 * Looks at the batch until it finishes or the timeout passes, with a bar of settled chunks: conditional
 * GETs (a 304 when nothing changed), spaced by nextPollMs. Exported for the wait's measurement.
 */
export async function follow(
  client: ApiClient,
  a: Accepted,
  o: Pick<SubmitOptions, 'timeoutSeconds' | 'pollMs' | 'progress'>,
): Promise<BatchStatusBody> {
  // Drawn from the first answer on: a re-submit of a finished batch starts at its real progress, not at 0.
  const bar = progressBar('chunks', 'chunks', o.progress);
  let drawn = false;
  const started = Date.now();
  const deadline = started + o.timeoutSeconds * 1000;
  let last: BatchStatusBody | undefined;
  let etag: string | undefined;
  let unchanged = 0;
  try {
    for (let i = 0; i < 1_000_000; i++) {
      const got = await client.jsonIfChanged<BatchStatusBody>(
        `status of ${a.batchId}`,
        `/api/batches/${a.batchId}`,
        etag,
      );
      if (got) {
        last = got.body;
        etag = got.etag;
        unchanged = 0;
        const settled = last.chunksDone + last.chunksFailed;
        const note = { note: last.chunksFailed > 0 ? ` (${last.chunksFailed} failed)` : '' };
        if (drawn) bar.update(settled, note);
        else bar.start(a.chunks, settled, note);
        drawn = true;
      } else unchanged++;
      const now = Date.now();
      if (last?.status === 'completed' || last?.status === 'failed' || now >= deadline) break;
      const wait = nextPollMs({ minMs: o.pollMs, elapsedMs: now - started, unchanged });
      await new Promise((r) => setTimeout(r, Math.min(wait, deadline - now)));
    }
  } finally {
    if (drawn) bar.stop();
  }
  if (!last) throw new CliError(`no status for ${a.batchId}`, EXIT.error);
  return last;
}
