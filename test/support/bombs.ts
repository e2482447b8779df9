/**
 * Hostile bodies for the bad-input suites (test/ingest/input-rejections.test.ts,
 * test/http/host-rejections.test.ts): gzip bombs built by streaming (a 1 GiB bomb never sits in
 * memory inflated), and a large valid batch whose validation takes long enough to disconnect in the
 * middle of it.
 */
import { createGzip } from 'node:zlib';

const BLOCK = 16 * 1024 * 1024;

/** gzip of `pattern` repeated to `bytes` bytes (cut at the end), as one gzip member. */
export async function gzipBomb(pattern: string | number, bytes: number, level = 1): Promise<Buffer> {
  const block =
    typeof pattern === 'number'
      ? Buffer.alloc(BLOCK, pattern)
      : Buffer.from(pattern.repeat(Math.ceil(BLOCK / pattern.length)).slice(0, BLOCK));
  const gzip = createGzip({ level });
  const out: Buffer[] = [];
  gzip.on('data', (d: Buffer) => out.push(d));
  const ended = new Promise<void>((resolve, reject) => {
    gzip.once('end', resolve);
    gzip.once('error', reject);
  });
  for (let written = 0; written < bytes; written += BLOCK) {
    if (!gzip.write(block.subarray(0, Math.min(BLOCK, bytes - written))))
      await new Promise((r) => gzip.once('drain', r));
  }
  gzip.end();
  await ended;
  return Buffer.concat(out);
}

/** `n` valid transactions as NDJSON, ids t0…t{n-1}. */
export function validBatch(n: number): Buffer {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    lines.push(
      `{"id":"t${i}","account":"a${i % 1000}","timestamp":"2026-03-01T10:00:00Z","type":"charge","amount":${100 + (i % 97)},"currency":"EUR","region":"EU"}`,
    );
  }
  return Buffer.from(lines.join('\n'));
}
