/**
 * Pass one of ingest: read the whole body, validate every record, write nothing. With
 * `chunking`, each valid record's canonical line also goes into chunk blobs kept in memory
 * (ChunkKeeper), so a valid body needs no second pass. Collects at most MAX_DETAILS problems
 * but counts them all.
 */
import { type ErrorDetail, ValidationError } from '../errors';
import type { EncodedChunk } from '../model/chunk-codec';
import { MAX_TRANSACTIONS, validateTransaction } from '../model/transaction';
import { type BodySource, hashing } from './body';
import { ChunkKeeper } from './chunks';
import { checkRecord } from './record-text';
import { type BodyFormat, readRecords } from './records';

export const MAX_DETAILS = 100;

export interface BodySummary {
  transactions: number;
  /** sha256 of the (inflated) body: an Idempotency-Key replay must carry the same body. */
  sha256: string;
  /** The chunk blobs, when asked for and they fit the bound; otherwise ingest cuts them itself. */
  chunks?: EncodedChunk[];
}

export interface Chunking {
  /** Transactions per chunk. */
  size: number;
  /** Compressed bytes kept at most. */
  maxBytes: number;
}

/**
 * Settles the candidates with the real ids, read again from the body (only when there are any:
 * a batch with duplicate ids, or a 64-bit hash collision). Within each group of equal hashes, an
 * id repeats exactly when a string repeats. Returns the duplicates in line order.
 */
async function verify(open: BodySource, format: BodyFormat, candidates: readonly { line: number; first: number }[]): Promise<ErrorDetail[]> {
  const wanted = new Set<number>();
  let last = 0;
  for (const c of candidates) {
    wanted.add(c.line).add(c.first);
    last = Math.max(last, c.line);
  }
  const ids = new Map<number, string>();
  for await (const rec of readRecords(open(), format)) {
    if (rec.line > last) break;
    if (!wanted.has(rec.line)) continue;
    const r = rec.error === undefined ? validateTransaction(rec.value, rec.line) : undefined;
    if (!r || 'errors' in r) throw new Error(`body changed between validation passes at line ${rec.line}`);
    ids.set(rec.line, r.ok.id);
  }
  const groups = new Map<number, number[]>();
  for (const c of candidates) {
    const g = groups.get(c.first);
    if (g) g.push(c.line);
    else groups.set(c.first, [c.line]);
  }
  const out: ErrorDetail[] = [];
  for (const [first, lines] of groups) {
    const firstSeen = new Map<string, number>([[ids.get(first) ?? '', first]]);
    for (const line of lines) {
      const id = ids.get(line);
      if (id === undefined) throw new Error(`body changed between validation passes at line ${line}`);
      const seenAt = firstSeen.get(id);
      if (seenAt !== undefined) out.push({ line, field: 'id', message: `duplicate id (first seen at line ${seenAt})` });
      else firstSeen.set(id, line);
    }
  }
  return out.sort((x, y) => x.line - y.line);
}

/** The first `max` of two line-ordered lists, merged by line (a line never appears in both). */
function mergeByLine(a: readonly ErrorDetail[], b: readonly ErrorDetail[], max: number): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  let i = 0;
  let j = 0;
  while (out.length < max && (i < a.length || j < b.length)) {
    if (j >= b.length || (i < a.length && (a[i] as ErrorDetail).line <= (b[j] as ErrorDetail).line)) out.push(a[i++] as ErrorDetail);
    else out.push(b[j++] as ErrorDetail);
  }
  return out;
}

export async function validateBody(open: BodySource, format: BodyFormat, chunking?: Chunking): Promise<BodySummary> {
  // Problems other than duplicate ids, in line order; duplicates are settled after the pass.
  const details: ErrorDetail[] = [];
  let problems = 0;
  let count = 0;
  let limit: ErrorDetail | undefined;
  const keeper = chunking ? new ChunkKeeper(chunking.size, chunking.maxBytes) : undefined;
  const add = (d: ErrorDetail): void => {
    problems++;
    // Nothing of an invalid batch is kept, let alone written.
    keeper?.drop();
    if (details.length < MAX_DETAILS) details.push(d);
  };
  // The one structure that grows with the batch (bounded by MAX_TRANSACTIONS), 12 bytes per id.
  const seen = new IdTable();
  const { stream, digest } = hashing(open());
  for await (const rec of readRecords(stream, format, { textOnly: true })) {
    // Every record counts against the limit, valid or not, and the limit detail is always
    // shown: it tells the client to split the batch, whatever else is wrong with it.
    if (count === MAX_TRANSACTIONS) {
      problems++;
      limit = { line: rec.line, field: '', message: `a batch holds at most ${MAX_TRANSACTIONS} transactions` };
      break;
    }
    count++;
    if (rec.error !== undefined) {
      add({ line: rec.line, field: '', message: rec.error });
      if (rec.fatal) break;
      continue;
    }
    const r = checkRecord(rec);
    if ('errors' in r) {
      for (const d of r.errors) add(d);
      continue;
    }
    seen.add(r.id, rec.line);
    const wait = keeper?.add(r.line);
    if (wait) await wait;
  }
  const duplicates = seen.candidates.length > 0 ? await verify(open, format, seen.candidates) : [];
  problems += duplicates.length;
  const shownDetails = mergeByLine(details, duplicates, MAX_DETAILS);
  if (limit) shownDetails.splice(MAX_DETAILS - 1, Infinity, limit);
  if (problems === 0 && count === 0) {
    problems++;
    shownDetails.push({ line: 0, field: '', message: 'the batch is empty: it must hold 1 to 1000000 transactions' });
  }
  if (problems > 0) {
    const shown = problems > shownDetails.length ? ` (first ${shownDetails.length} shown)` : '';
    throw new ValidationError(`the batch has ${problems} problem${problems === 1 ? '' : 's'}${shown}`, 400, 'invalid_batch', shownDetails);
  }
  const chunks = await keeper?.finish();
  return { transactions: count, sha256: digest(), ...(chunks ? { chunks } : {}) };
}

/* Two independent 32-bit FNV-1a hashes of the UTF-16 code units, each finished with murmur3's mix. */
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The ids seen so far, for the uniqueness rule: a 64-bit hash of each id and the line it was
 * first seen on, in an open-addressing table of 12 bytes per slot. A Map of the id strings
 * costs ~100 bytes per id, which made a 1,000,000-line batch hold ~100 MB for this alone.
 * Equal hashes only make a candidate; validate-body settles candidates exactly, with the ids.
 */
class IdTable {
  private h1 = new Uint32Array(1024);
  private h2 = new Uint32Array(1024);
  /** First line with this hash, plus one (0 = empty slot). */
  private first = new Uint32Array(1024);
  private size = 0;
  /** Records whose id hash was seen before: their line and the first line with that hash. */
  readonly candidates: { line: number; first: number }[] = [];

  add(id: string, line: number): void {
    let a = 0x811c9dc5;
    let b = 0x050c5d1f;
    for (let i = 0; i < id.length; i++) {
      const c = id.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
    }
    a = mix(a);
    b = mix(b ^ id.length);
    const mask = this.first.length - 1;
    // Bounded: the table is never more than half full, so an empty slot is always reached.
    for (let s = a & mask; ; s = (s + 1) & mask) {
      const f = this.first[s] as number;
      if (f === 0) {
        this.h1[s] = a;
        this.h2[s] = b;
        this.first[s] = line + 1;
        if (++this.size * 2 > this.first.length) this.grow();
        return;
      }
      if (this.h1[s] === a && this.h2[s] === b) {
        this.candidates.push({ line, first: f - 1 });
        return;
      }
    }
  }

  private grow(): void {
    const { h1, h2, first } = this;
    const n = first.length * 2;
    this.h1 = new Uint32Array(n);
    this.h2 = new Uint32Array(n);
    this.first = new Uint32Array(n);
    const mask = n - 1;
    for (let i = 0; i < first.length; i++) {
      if (first[i] === 0) continue;
      let s = (h1[i] as number) & mask;
      while (this.first[s] !== 0) s = (s + 1) & mask;
      this.h1[s] = h1[i] as number;
      this.h2[s] = h2[i] as number;
      this.first[s] = first[i] as number;
    }
  }
}
