/**
 * The chunk pieces of a body (chunk-size.ts), cut during its validation pass and kept in memory, so a valid
 * body is not read and parsed a second time, and nothing is written before the whole body has
 * validated. Kept compressed (a 1,000,000-transaction batch is ~20 MB), and only up to a bound:
 * past it they are dropped, and ingest cuts them in a second pass (chunk-source.ts).
 */
import { encodeChunkLines, type EncodedChunk } from '../model/chunk-codec';
import { Pool } from '../util/pool';

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
  add(canonical: string): Promise<void> | undefined {
    if (this.overflowed) return undefined;
    this.lines.push(canonical);
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
