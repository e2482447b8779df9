/** The two body formats, and the reader for each. */
import type { ByteSource } from './body';
import { readJsonArray } from './json-array';
import { readNdjson } from './ndjson';
import type { RecordItem } from './record-item';

export type BodyFormat = 'ndjson' | 'json';

/**
 * The body's records in order, as text (or why they are not records), a slice's worth at a time:
 * the validation pass, which reads every record of every batch, takes one async step per slice.
 */
export function readRecordBatches(source: ByteSource, format: BodyFormat): AsyncGenerator<RecordItem[]> {
  return format === 'ndjson' ? readNdjson(source) : readJsonArray(source);
}

/** The body's records in order, one at a time (the second looks, which read few or stop early). */
export async function* readRecords(source: ByteSource, format: BodyFormat): AsyncGenerator<RecordItem> {
  for await (const batch of readRecordBatches(source, format)) yield* batch;
}
