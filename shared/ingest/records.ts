/** The two body formats, and the reader for each. */
import type { ByteSource } from './body';
import { readJsonArray } from './json-array';
import { readNdjson } from './ndjson';
import type { RecordItem } from './record-item';

export type BodyFormat = 'ndjson' | 'json';

/** The body's records in order, as text (or why they are not records). */
export function readRecords(source: ByteSource, format: BodyFormat): AsyncGenerator<RecordItem> {
  return format === 'ndjson' ? readNdjson(source) : readJsonArray(source);
}
