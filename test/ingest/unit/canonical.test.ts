/**
 * The one-parse path: canonical lines, reading them back by position, chunk blobs kept by the
 * validation pass, and the NDJSON reader, each checked against the straightforward way
 * (JSON.stringify, JSON.parse + validateTransaction, a second pass, a line-by-line reader).
 */
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';

import { bufferSource } from '../../../shared/ingest/body';
import { chunkBody } from '../../../shared/ingest/chunk-source';
import { MAX_RECORD_BYTES } from '../../../shared/ingest/record-item';
import { readRecords } from '../../../shared/ingest/records';
import { validateBody } from '../../../shared/ingest/validate-body';
import { canonicalLine, parseCanonical } from '../../../shared/model/canonical-line';
import { decodeChunk, encodeChunk, encodeChunkLines } from '../../../shared/model/chunk-codec';
import type { Transaction } from '../../../shared/model/transaction';
import { isValidTransaction, validateTransaction } from '../../../shared/model/validate-transaction';
import { generate, rng, toNdjson } from '../../../tools/testkit/generate';

const txns = generate(20_000, 41, 300);

describe('canonical lines', () => {
  test('are exactly what JSON.stringify gives for a validated transaction', () => {
    const extremes: Transaction[] = [
      {
        id: 'x'.repeat(64),
        account: 'a.b_c:d-e',
        timestamp: '2026-02-28T23:59:60.123456789+23:59',
        type: 'refund',
        amount: 1_000_000_000,
        currency: 'XYZ',
        region: 'A-1',
      },
      { id: '0', account: '1', timestamp: '0000-02-29t00:00:00z', type: 'charge', amount: 1, currency: 'AAA' },
    ];
    for (const t of [...txns, ...extremes]) {
      const r = validateTransaction(JSON.parse(JSON.stringify(t)), 1);
      assert.ok('ok' in r);
      assert.equal(canonicalLine(r.ok), JSON.stringify(r.ok));
      assert.deepEqual(parseCanonical(canonicalLine(r.ok)), r.ok);
      assert.equal(isValidTransaction(r.ok), true);
    }
  });

  test('a mutated line read by position and valid is exactly canonical and what JSON.parse reads', () => {
    const random = rng(5);
    const alphabet = '"\\{}[],: 0123456789aA-.Ze+';
    let accepted = 0;
    let rejected = 0;
    for (let i = 0; i < 60_000; i++) {
      let s = canonicalLine(txns[i % 2_000]!);
      for (let k = 1 + Math.floor(random() * 3); k > 0; k--) {
        const at = Math.floor(random() * s.length);
        const c = alphabet[Math.floor(random() * alphabet.length)]!;
        const op = random();
        s =
          op < 0.34
            ? s.slice(0, at) + c + s.slice(at + 1)
            : op < 0.67
              ? s.slice(0, at) + c + s.slice(at)
              : s.slice(0, at) + s.slice(at + 1);
      }
      const t = parseCanonical(s);
      if (t === undefined) continue;
      // Whatever it read, validation says the same as the full validator's.
      const full = validateTransaction(t, 1);
      assert.equal(isValidTransaction(t), 'ok' in full, s);
      if (!isValidTransaction(t)) {
        rejected++;
        continue;
      }
      accepted++;
      assert.equal(canonicalLine(t), s, 'a valid positional read is the canonical text itself');
      assert.deepEqual(JSON.parse(s), t, 'and what JSON.parse reads from it');
    }
    assert.ok(accepted > 100 && rejected > 100, `both outcomes exercised (${accepted} accepted, ${rejected} rejected)`);
  });
});

describe('chunk blobs', () => {
  test('bytes as before: the text JSON.stringify lines gave', async () => {
    const slice = txns.slice(0, 2_000);
    const enc = await encodeChunk(3, slice);
    assert.equal(gunzipSync(enc.body).toString('utf8'), slice.map((t) => JSON.stringify(t)).join('\n') + '\n');
    assert.equal(enc.count, 2_000);
  });

  test('decode: by position with a verified checksum, in full without one or for other layouts', async () => {
    const slice = txns.slice(0, 500);
    const enc = await encodeChunk(0, slice);
    assert.deepEqual(await decodeChunk(enc.body, enc.sha256), slice);
    assert.deepEqual(await decodeChunk(enc.body, undefined), slice);
    // Valid JSON, not the canonical layout (spaces, another key order): still read, in full.
    const loose = slice.map((t) =>
      JSON.stringify(Object.fromEntries(Object.entries(t).reverse()), null, 1).replace(/\n/g, ' '),
    );
    const other = await encodeChunkLines(0, loose);
    assert.deepEqual(await decodeChunk(other.body, other.sha256), slice);
    await assert.rejects(decodeChunk(enc.body, other.sha256), /checksum mismatch/);
  });

  test('kept by the validation pass: the same chunks a second pass cuts, in NDJSON and JSON arrays', async () => {
    const slice = txns.slice(0, 4_321);
    const bodies: [Buffer, 'ndjson' | 'json'][] = [
      [toNdjson(slice), 'ndjson'],
      [Buffer.from(JSON.stringify(slice, null, 2)), 'json'],
    ];
    for (const [body, format] of bodies) {
      for (const size of [1, 7, 2_000]) {
        const open = bufferSource(body, false, 1e9);
        const summary = await validateBody(open, format, { size, maxBytes: 64 * 1024 * 1024 });
        const second: string[] = [];
        let index = 0;
        for await (const lines of chunkBody({ open, format, sha256: summary.sha256 }, size))
          second.push((await encodeChunkLines(index++, lines)).sha256);
        assert.deepEqual(
          summary.chunks?.map((c) => c.sha256),
          second,
          `${format}, chunks of ${size}`,
        );
        assert.deepEqual(
          summary.chunks?.map((c) => c.index),
          second.map((_, i) => i),
        );
        assert.equal(summary.transactions, slice.length);
      }
    }
  });

  test('the second pass reads records again without their rules, and refuses a body that changed', async () => {
    const loose = [
      '{"currency":"EUR","amount":100,"type":"charge","timestamp":"2026-03-01T10:00:00Z","account":"a1","id":"t1","region":null}',
      '{"id":"t\\u0032", "account":"a1","timestamp":"2026-03-01T10:00:00Z","type":"refund","amount":1e2,"currency":"EUR","region":"EU"}',
    ].join('\n');
    const open = bufferSource(Buffer.from(loose), false, 1e9);
    const summary = await validateBody(open, 'ndjson', { size: 10, maxBytes: 1e9 });
    const second: string[] = [];
    for await (const lines of chunkBody({ open, format: 'ndjson', sha256: summary.sha256 }, 10)) second.push(...lines);
    assert.deepEqual(second, [
      '{"id":"t1","account":"a1","timestamp":"2026-03-01T10:00:00Z","type":"charge","amount":100,"currency":"EUR"}',
      '{"id":"t2","account":"a1","timestamp":"2026-03-01T10:00:00Z","type":"refund","amount":100,"currency":"EUR","region":"EU"}',
    ]);
    assert.equal((await encodeChunkLines(0, second)).sha256, summary.chunks?.[0]?.sha256);
    const changed = bufferSource(Buffer.from(loose.replace('"t1"', '"t9"')), false, 1e9);
    await assert.rejects(async () => {
      for await (const lines of chunkBody({ open: changed, format: 'ndjson', sha256: summary.sha256 }, 10))
        assert.ok(lines);
    }, /body changed between passes/);
  });

  test('past the memory bound nothing is kept, and ingest cuts the chunks in a second pass', async () => {
    const summary = await validateBody(bufferSource(toNdjson(txns.slice(0, 3_000)), false, 1e9), 'ndjson', {
      size: 100,
      maxBytes: 10_000,
    });
    assert.equal(summary.transactions, 3_000);
    assert.equal(summary.chunks, undefined);
  });
});

/** A record's text as the reference reads it: its JSON value, or 'malformed'. */
function valueOf(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return 'malformed';
  }
}

/** The reference: the whole body split at newlines, each line checked on its own. */
function referenceRead(body: Buffer): [number, unknown][] {
  const out: [number, unknown][] = [];
  let start = 0;
  for (let line = 1; start <= body.length; line++) {
    let nl = body.indexOf(0x0a, start);
    if (nl === -1) nl = body.length;
    const bytes = body.subarray(start, nl);
    start = nl + 1;
    if (bytes.length > MAX_RECORD_BYTES) out.push([line, 'oversize']);
    else if (!isUtf8(bytes)) out.push([line, 'utf8']);
    else {
      const text = bytes.toString('utf8').trim();
      if (text === '') continue;
      try {
        out.push([line, JSON.parse(text) as unknown]);
      } catch {
        out.push([line, 'malformed']);
      }
    }
  }
  return out;
}

describe('the NDJSON reader', () => {
  test('reads what a line-by-line reader reads, however the body is sliced', async () => {
    const random = rng(9);
    const lines = txns.slice(0, 400).map((t) => JSON.stringify(t));
    lines.splice(10, 0, '', '  ', '{"a":1}\r', '{oops', 'x'.repeat(MAX_RECORD_BYTES + 5), '{"é":"ü"}');
    lines.splice(200, 0, 'y'.repeat(MAX_RECORD_BYTES - 3), '"\u2603"'.repeat(30_000));
    const parts = lines.map((l) => Buffer.from(l));
    parts.splice(300, 0, Buffer.from([0x7b, 0xff, 0xfe, 0x7d])); // not UTF-8
    const body = Buffer.concat(parts.flatMap((p) => [p, Buffer.from('\n')]));
    const expected = referenceRead(body);
    for (const maxSlice of [1, 37, 4_096, 65_536, body.length]) {
      function* slices(): Generator<Buffer> {
        for (let i = 0; i < body.length;) {
          const n = 1 + Math.floor(random() * maxSlice);
          yield body.subarray(i, i + n);
          i += n;
        }
      }
      const got: [number, unknown][] = [];
      for await (const r of readRecords(slices(), 'ndjson')) {
        const kind =
          r.error === undefined ? valueOf(r.text) : r.error.startsWith('record longer') ? 'oversize' : 'utf8';
        got.push([r.line, kind]);
      }
      assert.deepEqual(got, expected, `slices of up to ${maxSlice} bytes`);
    }
  });
});
