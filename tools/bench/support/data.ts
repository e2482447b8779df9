/**
 * The bench's input: the test suite's seeded generator (Zipf-like accounts, six currencies,
 * eight regions, 10 % refunds), so every design gets byte-identical batches. Bodies are
 * cached on disk, keyed by size and seed, so child processes read instead of regenerating.
 */
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

import type { Transaction } from '../../../shared/model/transaction';
import { generate, toNdjson } from '../../testkit/generate';

/** Distinct accounts the generator draws from (Zipf-like: account k with probability ~1/k). */
const ACCOUNTS = 2_000;

const DATA_DIR = join(tmpdir(), 'pushdrain-bench-data');

export interface BatchSpec {
  count: number;
  seed: number;
}

function pathOf(spec: BatchSpec): string {
  return join(DATA_DIR, `v1-${spec.count}-${spec.seed}-${ACCOUNTS}.ndjson`);
}

/** The cached NDJSON file of a batch, generated on first use. */
export function batchFile(spec: BatchSpec): string {
  const file = pathOf(spec);
  if (existsSync(file)) return file;
  const body = toNdjson(generate(spec.count, spec.seed, ACCOUNTS));
  mkdirSync(DATA_DIR, { recursive: true });
  // Write then rename: a concurrent reader never sees half a file.
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, body);
  renameSync(tmp, file);
  return file;
}

/** The NDJSON body of a batch. */
export function batchBody(spec: BatchSpec): Buffer {
  return readFileSync(batchFile(spec));
}

export function batchTransactions(spec: BatchSpec): Transaction[] {
  return generate(spec.count, spec.seed, ACCOUNTS);
}

/** The batches of a run: seeds base, base+1, … so runs of different sizes never share ids. */
export function batchSpecs(batches: number, perBatch: number, seedBase: number): BatchSpec[] {
  return Array.from({ length: batches }, (_, i) => ({ count: perBatch, seed: seedBase + i }));
}

/** A cached file of the first lines of the given batches, and what it holds. */
export interface LinesFile {
  file: string;
  lines: number;
  bytes: number;
}

async function written(out: ReturnType<typeof createWriteStream>): Promise<void> {
  await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
}

/**
 * The first `transactions` lines of `sources` as one NDJSON file, built once from the cached
 * bodies; with `maxBytes`, only as many whole lines as fit (a body at the cap).
 */
export async function linesFile(
  transactions: number,
  sources: readonly BatchSpec[],
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<LinesFile> {
  const capped = Number.isFinite(maxBytes) ? `-max${maxBytes}` : '';
  const file = join(DATA_DIR, `lines-${transactions}-${sources[0]?.seed ?? 0}${capped}.ndjson`);
  const count = `${file}.lines`;
  if (existsSync(file) && existsSync(count))
    return { file, lines: Number(readFileSync(count, 'utf8')), bytes: statSync(file).size };
  mkdirSync(DATA_DIR, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const out = createWriteStream(tmp);
  let lines = 0;
  let bytes = 0;
  let full = false;
  for (const spec of sources) {
    if (lines === transactions || full) break;
    const input = createInterface({ input: createReadStream(batchFile(spec)) });
    for await (const line of input) {
      if (lines === transactions) break;
      if (line === '') continue;
      const size = Buffer.byteLength(line) + 1;
      if (bytes + size > maxBytes) {
        full = true;
        break;
      }
      if (!out.write(`${line}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
      lines++;
      bytes += size;
    }
    input.close();
  }
  await written(out);
  if (lines < transactions && !full) throw new Error(`not enough source transactions for a ${transactions}-line file`);
  writeFileSync(count, String(lines));
  renameSync(tmp, file);
  return { file, lines, bytes };
}

/** The same lines gzipped (cached beside them). */
export async function gzipFile(lines: LinesFile): Promise<LinesFile> {
  const file = `${lines.file}.gz`;
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    await pipeline(createReadStream(lines.file), createGzip(), createWriteStream(tmp));
    renameSync(tmp, file);
  }
  return { file, lines: lines.lines, bytes: statSync(file).size };
}
