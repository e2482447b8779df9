/**
 * Cutting a valid body into chunk blobs. Normally during the validation pass: the chunks are
 * kept in memory (ChunkKeeper), so a valid body is not read and parsed a second time, and
 * nothing is written before the whole body has validated. Kept compressed (a 1,000,000-
 * transaction batch is ~20 MB), and only up to a bound: past it they are dropped and cut in a
 * second pass over the body instead (chunkBody).
 */
import { encodeChunkLines,type EncodedChunk } from '../model/chunk-codec';
import { Pool } from '../util/pool';
import type { BodySource } from './body';
import { checkRecord } from './record-text';
import { type BodyFormat, readRecords } from './records';

/** Compressions in flight while the validator goes on parsing (zlib works on the thread pool). */
const COMPRESSING = 1;

export class ChunkKeeper {
  private lines: string[] = [];
  private readonly done: EncodedChunk[] = [];
  private readonly compressions = new Pool(COMPRESSING);
  private kept = 0;
  private cuts = 0;
  /** Past the bound: nothing more is kept. */
  overflowed = false;

  constructor(
    private readonly size: number,
    private readonly maxBytes: number,
  ) {}

  /** Adds the next record's canonical line; resolves at once unless compressions must catch up. */
  add(line: string): Promise<void> | undefined {
    if (this.overflowed) return undefined;
    this.lines.push(line);
    return this.lines.length === this.size ? this.cut() : undefined;
  }

  /** The chunks in order, or undefined when the bound was passed (or compression failed). */
  async finish(): Promise<EncodedChunk[] | undefined> {
    if (!this.overflowed && this.lines.length > 0) await this.cut();
    await this.compressions.drain();
    if (this.overflowed) return undefined;
    return this.done.sort((a, b) => a.index - b.index);
  }

  /** Stops keeping and lets go of what was kept. */
  drop(): void {
    this.overflowed = true;
    this.lines = [];
    this.done.length = 0;
  }

  /** Waits for room, then starts compressing; a failed compression only stops the keeping. */
  private cut(): Promise<void> {
    const lines = this.lines;
    this.lines = [];
    const index = this.cuts++;
    return this.compressions.run(() =>
      encodeChunkLines(index, lines).then(
        (enc) => {
          if (this.overflowed) return;
          this.kept += enc.body.length;
          this.done.push(enc);
          if (this.kept > this.maxBytes) this.drop();
        },
        () => this.drop(),
      ),
    );
  }
}

/** The chunks kept by validation, or (past the memory bound) cut again from the body. */
export async function* chunkSource(open: BodySource, format: BodyFormat, size: number, kept: EncodedChunk[] | undefined): AsyncGenerator<() => Promise<EncodedChunk>> {
  if (kept) {
    for (const enc of kept) yield () => Promise.resolve(enc);
    return;
  }
  let index = 0;
  for await (const lines of chunkBody(open, format, size)) {
    const chunk = index++;
    yield () => encodeChunkLines(chunk, lines);
  }
}

/**
 * Pass two, for a batch too big to keep its chunks in memory: re-read the (already valid)
 * body and cut it into chunks of canonical lines. A record that no longer validates is a bug
 * upstream.
 */
export async function* chunkBody(open: BodySource, format: BodyFormat, size: number): AsyncGenerator<string[]> {
  let chunk: string[] = [];
  for await (const rec of readRecords(open(), format, { textOnly: true })) {
    const r = rec.error === undefined ? checkRecord(rec) : undefined;
    if (!r || 'errors' in r) throw new Error(`body changed between validation and chunking at line ${rec.line}`);
    chunk.push(r.line);
    if (chunk.length === size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}
