/**
 * The bench's input: the test suite's seeded generator (Zipf-like accounts, six currencies,
 * eight regions, 10 % refunds), so every design gets byte-identical batches. Bodies are
 * cached on disk, keyed by size and seed, so child processes read instead of regenerating.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Transaction } from '../../../shared/model/transaction';
import { generate, toNdjson } from '../../testkit/generate';

/** Distinct accounts the generator draws from (Zipf-like: account k with probability ~1/k). */
const ACCOUNTS = 2_000;

export const DATA_DIR = join(tmpdir(), 'pushdrain-bench-data');

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
