/**
 * The uniqueness rule for ids within a batch. During the validation pass each id goes into a
 * table of 64-bit hashes (12 bytes per id: a Map of the id strings costs ~100 bytes per id,
 * ~100 MB for a 1,000,000-line batch); a hash seen before only makes a candidate. After the
 * pass, candidates (if any: a batch with duplicate ids, or a hash collision) are confirmed with
 * the real ids, read again from the body.
 */
import type { ErrorDetail } from '../errors';
import type { BodySource } from './body';
import { bodyChanged } from './ingest-errors';
import { type BodyFormat, readRecords } from './records';
import { rereadRecord } from './reread-record';

/* Two independent 32-bit FNV-1a hashes of the UTF-16 code units, each finished with murmur3's mix. */
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A record whose id hash was seen before: its line and the first line with that hash. */
interface Candidate {
  line: number;
  first: number;
}

export class DuplicateIds {
  private h1 = new Uint32Array(1024);
  private h2 = new Uint32Array(1024);
  /** First line with this hash, plus one (0 = empty slot); open addressing. */
  private first = new Uint32Array(1024);
  private size = 0;
  private readonly candidates: Candidate[] = [];

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

  /**
   * The duplicates, in line order, one detail per repeat. Reads the body again only when there
   * are candidates; within each group of equal hashes, an id repeats exactly when a string repeats.
   */
  async confirm(open: BodySource, format: BodyFormat): Promise<ErrorDetail[]> {
    if (this.candidates.length === 0) return [];
    const ids = await this.idsOf(open, format);
    const groups = new Map<number, number[]>();
    for (const c of this.candidates) {
      const g = groups.get(c.first);
      if (g) g.push(c.line);
      else groups.set(c.first, [c.line]);
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

  /** The ids on the candidates' lines (only those), read up to the last of them. */
  private async idsOf(open: BodySource, format: BodyFormat): Promise<Map<number, string>> {
    const wanted = new Set<number>();
    let last = 0;
    for (const c of this.candidates) {
      wanted.add(c.line).add(c.first);
      last = Math.max(last, c.line);
    }
    const ids = new Map<number, string>();
    for await (const rec of readRecords(open(), format)) {
      if (rec.line > last) break;
      if (wanted.has(rec.line)) ids.set(rec.line, rereadRecord(rec).transaction.id);
    }
    return ids;
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
