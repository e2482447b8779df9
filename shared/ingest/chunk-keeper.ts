/**
 * The chunk pieces of a body (chunk-size.ts), cut during its validation pass and kept in memory, so a valid
 * body is not read and parsed a second time, and nothing is written before the whole body has
 * validated. Kept compressed (a 1,000,000-transaction batch is ~20 MB), and only up to a bound:
 * past it they are dropped, and ingest cuts them in a second pass (chunk-source.ts). A body read
 * once (a request's stream) has no second pass: its pieces are also where the duplicate-id rule
 * and a take-over's other cut read it again (keptLines).
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';

import { encodeChunkLines, type EncodedChunk } from '../model/chunk-codec';
import { Pool } from '../util/pool';

const gunzipAsync = promisify(gunzip);

/** The canonical lines of kept pieces, a piece at a time, in order: a second look at a body read once. */
export async function* keptLines(pieces: readonly EncodedChunk[]): AsyncGenerator<string[]> {
  for (const p of pieces) {
    const text = (await gunzipAsync(p.body)).toString('utf8');
    // Each line ends in a newline: the last item of the split is the empty rest.
    yield text.split('\n').slice(0, -1);
  }
}

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
