/**
 * The chunk blob format, shared by ingest (which writes it) and the map step (which reads
 * it): gzip NDJSON of transactions, with a sha256 of the compressed bytes carried by the
 * pointer. A corrupt blob is a permanent error: it will not heal on retry.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';

import { PermanentError } from '../errors';
import { type Transaction, validateTransaction } from './transaction';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export interface EncodedChunk {
  index: number;
  count: number;
  body: Buffer;
  sha256: string;
}

export function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export async function encodeChunk(index: number, txns: readonly Transaction[]): Promise<EncodedChunk> {
  const text = txns.map((t) => JSON.stringify(t)).join('\n') + '\n';
  const body = await gzipAsync(Buffer.from(text, 'utf8'));
  return { index, count: txns.length, body, sha256: sha256Hex(body) };
}

/** Inverse of encodeChunk, verifying integrity first: a mismatch will not heal on retry. */
export async function decodeChunk(body: Buffer, expectedSha256: string | undefined): Promise<Transaction[]> {
  if (expectedSha256 && sha256Hex(body) !== expectedSha256) throw new PermanentError('chunk blob checksum mismatch');
  let text: string;
  try {
    text = (await gunzipAsync(body)).toString('utf8');
  } catch (e) {
    throw new PermanentError('chunk blob is not valid gzip', { cause: e });
  }
  const out: Transaction[] = [];
  let line = 0;
  for (const raw of text.split('\n')) {
    line++;
    if (raw === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      throw new PermanentError(`chunk blob line ${line} is not JSON`, { cause: e });
    }
    const r = validateTransaction(value, line);
    if ('errors' in r) throw new PermanentError(`chunk blob line ${line} is not a valid transaction`);
    out.push(r.ok);
  }
  return out;
}
