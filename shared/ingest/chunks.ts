/**
 * Pass two of ingest: re-read the (already valid) body and cut it into chunks of validated
 * transactions; model/chunk-codec.ts turns each into the chunk blob's bytes.
 */
import { type Transaction, validateTransaction } from '../model/transaction';
import type { BodySource } from './body';
import { type BodyFormat, readRecords } from './records';

/** Yields validated transactions in chunks of `size`; a record that no longer validates is a bug upstream. */
export async function* chunkBody(open: BodySource, format: BodyFormat, size: number): AsyncGenerator<Transaction[]> {
  let chunk: Transaction[] = [];
  for await (const rec of readRecords(open(), format)) {
    const r = rec.error === undefined ? validateTransaction(rec.value, rec.line) : undefined;
    if (!r || 'errors' in r) throw new Error(`body changed between validation and chunking at line ${rec.line}`);
    chunk.push(r.ok);
    if (chunk.length === size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}
