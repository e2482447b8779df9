/** Two independent 32-bit FNV-1a hashes of the UTF-16 code units, each finished with murmur3's mix. */
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
export class IdTable {
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
