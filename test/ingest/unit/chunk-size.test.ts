/**
 * The chunk size rule (shared/ingest/chunk-size.ts): its figures for the batch sizes the
 * bench and the docs name, each bound on its own, and the pieces it is made of: a chunk of
 * several gzip members is the same bytes whether cut at once or joined from what validation
 * kept, and it reads back as one stream.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { defaultTuning } from '../../../shared/config/settings';
import { CHUNK_PIECE, chunkRule, fixedChunks, MAX_CHUNK_CHARS } from '../../../shared/ingest/chunk-size';
import { canonicalLine } from '../../../shared/model/canonical-line';
import { decodeChunk, encodeChunkLines, joinPieces } from '../../../shared/model/chunk-codec';
import { generate } from '../../../tools/testkit/generate';

/** A typical canonical line of the generated data is ~150 characters. */
const TYPICAL = 150;
const defaults = defaultTuning();
const rule = chunkRule(defaults);

describe('the chunk size rule, with the default settings (cap 20,000, 4 partitions, visibility 60 s)', () => {
  test('small batches keep the 2,000 of earlier versions', () => {
    assert.equal(defaults.chunkSize, 20_000);
    for (const n of [1, 1_000, 10_000, 16_000])
      assert.deepEqual(rule.plan({ transactions: n, longestLine: TYPICAL }), { size: 2_000, piece: 2_000 }, `${n}`);
  });

  test('bigger batches get bigger chunks: two per partition, in whole pieces, up to the cap', () => {
    const size = (n: number): number => rule.plan({ transactions: n, longestLine: TYPICAL }).size;
    assert.equal(size(40_000), 4_000); // 40,000 ÷ 8 = 5,000 → whole pieces
    assert.equal(size(100_000), 12_000); // 12,500 → 12,000: nine chunks
    assert.equal(size(160_000), 20_000); // exactly the cap
    assert.equal(size(1_000_000), 20_000); // the cap: 50 chunks instead of 500
    assert.deepEqual(rule.plan({ transactions: 100_000, longestLine: TYPICAL }), { size: 12_000, piece: CHUNK_PIECE });
  });

  test('more partitions want more chunks', () => {
    const sixteen = chunkRule({ ...defaults, partitions: 16 });
    assert.equal(sixteen.plan({ transactions: 100_000, longestLine: TYPICAL }).size, 2_000);
    assert.equal(sixteen.plan({ transactions: 1_000_000, longestLine: TYPICAL }).size, 20_000);
    assert.equal(sixteen.plan({ transactions: 400_000, longestLine: TYPICAL }).size, 12_000);
  });

  test('the memory bound: long lines make smaller chunks, whatever the batch', () => {
    // 4 MiB of text: 1,000-character lines allow 4,190 → 4,000.
    assert.equal(rule.plan({ transactions: 1_000_000, longestLine: 1_000 }).size, 4_000);
    // A 64 KiB record allows 63 lines: a chunk smaller than a piece is one member.
    assert.deepEqual(rule.plan({ transactions: 1_000_000, longestLine: 65_536 }), { size: 63, piece: 63 });
    assert.ok(63 * 65_537 <= MAX_CHUNK_CHARS);
  });

  test('the visibility bound: a chunk is mapped well within the visibility timeout', () => {
    // 60 s × 5,000 tx/s × 0.25 = 75,000: not the binding bound by default. 10 s: 12,500 → 12,000.
    const short = chunkRule({ ...defaults, visibilityTimeoutSeconds: 10 });
    assert.equal(short.plan({ transactions: 1_000_000, longestLine: TYPICAL }).size, 12_000);
    // 1 s: 1,250, under one piece: one member.
    const tiny = chunkRule({ ...defaults, visibilityTimeoutSeconds: 1 });
    assert.deepEqual(tiny.plan({ transactions: 1_000_000, longestLine: TYPICAL }), { size: 1_250, piece: 1_250 });
  });

  test("PUSHDRAIN_CHUNK_SIZE is the cap: below 2,000 it is every batch's size", () => {
    const capped = chunkRule({ ...defaults, chunkSize: 300 });
    assert.equal(capped.piece, 300);
    for (const n of [10, 1_000, 1_000_000])
      assert.deepEqual(capped.plan({ transactions: n, longestLine: TYPICAL }), { size: 300, piece: 300 });
    // A cap that is not whole pieces: rounded down to them.
    assert.equal(
      chunkRule({ ...defaults, chunkSize: 25_000 }).plan({ transactions: 1e6, longestLine: 1 }).size,
      24_000,
    );
  });

  test('fixedChunks cuts every batch alike', () => {
    assert.deepEqual(fixedChunks(7).plan({ transactions: 1_000_000, longestLine: 60_000 }), { size: 7, piece: 7 });
  });
});

describe('chunks made of pieces', () => {
  const lines = generate(5_000, 3, 40).map(canonicalLine);

  test('cut at once or joined from pieces: the same bytes, read back as one stream', async () => {
    const whole = await encodeChunkLines(0, lines, 2_000);
    const pieces = await Promise.all(
      [0, 2_000, 4_000].map((at, i) => encodeChunkLines(i, lines.slice(at, at + 2_000))),
    );
    const joined = joinPieces(0, pieces);
    assert.equal(joined.sha256, whole.sha256);
    assert.equal(joined.count, 5_000);
    assert.ok(whole.body.equals(joined.body));
    const back = await decodeChunk(whole.body, whole.sha256);
    assert.deepEqual(back.map(canonicalLine), lines);
  });

  test('one piece is the single-member chunk of earlier versions', async () => {
    const one = await encodeChunkLines(4, lines.slice(0, 2_000));
    assert.equal((await encodeChunkLines(4, lines.slice(0, 2_000), 2_000)).sha256, one.sha256);
    assert.deepEqual(joinPieces(9, [one]), { ...one, index: 9 });
  });
});
