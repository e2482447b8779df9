/**
 * `pushdrain sample`: a valid NDJSON batch of seeded, realistic transactions (the generator the
 * tests and the bench use), for a first `pushdrain submit` with nothing else at hand.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';

import { generate, toNdjson } from '../testkit/generate';

/** The largest batch the API accepts (docs/ARCHITECTURE.md, "Transaction (input)"). */
export const SAMPLE_MAX = 1_000_000;
/** Written a block at a time, so a million lines never sit in memory at once. */
const BLOCK = 10_000;

/** Writes `count` transactions to `out` (a file path, or stdout when undefined). */
export async function writeSample(count: number, seed: number, out?: string): Promise<void> {
  if (!Number.isInteger(count) || count < 1 || count > SAMPLE_MAX)
    throw new RangeError(`count must be 1 to ${SAMPLE_MAX.toLocaleString('en-US')} (a batch's limit), not ${count}`);
  const sink: Writable = out === undefined ? process.stdout : createWriteStream(out);
  for (let done = 0, block = 0; done < count; block++) {
    const n = Math.min(BLOCK, count - done);
    // Each block its own seed: ids (tx-<seed>-<i>) stay unique across blocks.
    if (!sink.write(toNdjson(generate(n, seed * 1_000 + block)))) await once(sink, 'drain');
    done += n;
  }
  if (out !== undefined) {
    sink.end();
    await finished(sink);
  }
}
