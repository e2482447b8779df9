/**
 * The uniqueness rule for ids within a batch. During the validation pass each id goes into a
 * table of 64-bit hashes (16 bytes per id: a Map of the id strings costs ~100 bytes per id,
 * ~100 MB for a 1,000,000-line batch); a hash seen before only makes a candidate. After the
 * pass, candidates (if any: a batch with duplicate ids, or a hash collision) are confirmed with
 * the real ids, read again: from the body (idsInBody), or, for a body read once, from the chunk
 * pieces validation kept (idsInPieces), where a valid record's ordinal is its place.
 */
import type { ErrorDetail } from '../errors';
import type { EncodedChunk } from '../model/chunk-codec';
import type { BodySource } from './body';
import { keptLines } from './chunk-keeper';
import { bodyChanged } from './ingest-errors';
import { type BodyFormat, readRecords } from './records';
import { rereadRecord } from './reread-record';

/** A record whose id is wanted: its line, and its ordinal among the valid records (0-based). */
interface IdAt {
  line: number;
  ordinal: number;
}

/** Reads the ids of the records asked for: by line. */
export type IdReader = (wanted: readonly IdAt[]) => Promise<Map<number, string>>;

/** The ids on the wanted lines, read from the body again up to the last of them. */
export function idsInBody(open: BodySource, format: BodyFormat): IdReader {
  return async (wanted) => {
    const lines = new Set<number>();
    let last = 0;
    // A loop, not Math.max(...): a batch of one repeated id asks for a million lines.
    for (const w of wanted) {
      lines.add(w.line);
      last = Math.max(last, w.line);
    }
    const ids = new Map<number, string>();
    for await (const rec of readRecords(open(), format)) {
      if (rec.line > last) break;
      if (lines.has(rec.line)) ids.set(rec.line, rereadRecord(rec).transaction.id);
    }
    return ids;
  };
}

/** The ids of the wanted records, read from the kept pieces (`size` valid records each) by ordinal. */
export function idsInPieces(pieces: readonly EncodedChunk[], size: number): IdReader {
  return async (wanted) => {
    const byPiece = new Map<number, IdAt[]>();
    let last = 0;
    for (const w of wanted) {
      const at = Math.floor(w.ordinal / size);
      const group = byPiece.get(at);
      if (group) group.push(w);
      else byPiece.set(at, [w]);
      last = Math.max(last, at);
    }
    const ids = new Map<number, string>();
    let at = 0;
    for await (const lines of keptLines(pieces)) {
      for (const w of byPiece.get(at) ?? []) {
        const text = lines[w.ordinal % size];
        if (text === undefined) throw bodyChanged(`record ${w.ordinal + 1} is not in the kept chunks`);
        ids.set(w.line, (JSON.parse(text) as { id: string }).id);
      }
      if (++at > last) break;
    }
    return ids;
  };
}

/* Two independent 32-bit FNV-1a hashes of the UTF-16 code units, each finished with murmur3's mix. */
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A record whose id hash was seen before, and the first record with that hash. */
interface Candidate {
  at: IdAt;
  first: IdAt;
}

export class DuplicateIds {
  private h1 = new Uint32Array(1024);
  private h2 = new Uint32Array(1024);
  /** First line with this hash, plus one (0 = empty slot); open addressing. */
  private first = new Uint32Array(1024);
  /** That record's ordinal among the valid ones. */
  private firstOrdinal = new Uint32Array(1024);
  private size = 0;
  private readonly candidates: Candidate[] = [];

  /** `ordinal`: the record's place among the valid records, 0-based. */
  add(id: string, line: number, ordinal: number): void {
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
        this.firstOrdinal[s] = ordinal;
        if (++this.size * 2 > this.first.length) this.grow();
        return;
      }
      if (this.h1[s] === a && this.h2[s] === b) {
        this.candidates.push({
          at: { line, ordinal },
          first: { line: f - 1, ordinal: this.firstOrdinal[s] as number },
        });
        return;
      }
    }
  }

  /**
   * The duplicates, in line order, one detail per repeat. Reads ids again only when there are
   * candidates; within each group of equal hashes, an id repeats exactly when a string repeats.
   */
  async confirm(read: IdReader): Promise<ErrorDetail[]> {
    if (this.candidates.length === 0) return [];
    const ids = await read(this.candidates.flatMap((c) => [c.at, c.first]));
    const groups = new Map<number, number[]>();
    for (const c of this.candidates) {
      const g = groups.get(c.first.line);
      if (g) g.push(c.at.line);
      else groups.set(c.first.line, [c.at.line]);
    }
    const out: ErrorDetail[] = [];
    for (const [first, lines] of groups) {
      const firstSeen = new Map<string, number>([[ids.get(first) ?? '', first]]);
      for (const line of lines) {
        const id = ids.get(line);
        if (id === undefined) throw bodyChanged(`line ${line} is gone`);
        const seenAt = firstSeen.get(id);
        if (seenAt !== undefined)
          out.push({ line, field: 'id', message: `duplicate id (first seen at line ${seenAt})` });
        else firstSeen.set(id, line);
      }
    }
    return out.sort((x, y) => x.line - y.line);
  }

  private grow(): void {
    const { h1, h2, first, firstOrdinal } = this;
    const n = first.length * 2;
    this.h1 = new Uint32Array(n);
    this.h2 = new Uint32Array(n);
    this.first = new Uint32Array(n);
    this.firstOrdinal = new Uint32Array(n);
    const mask = n - 1;
    for (let i = 0; i < first.length; i++) {
      if (first[i] === 0) continue;
      let s = (h1[i] as number) & mask;
      while (this.first[s] !== 0) s = (s + 1) & mask;
      this.h1[s] = h1[i] as number;
      this.h2[s] = h2[i] as number;
      this.first[s] = first[i] as number;
      this.firstOrdinal[s] = firstOrdinal[i] as number;
    }
  }
}
