/**
 * One record as the body readers (ndjson.ts, json-array.ts) hand it out: its text, or why its
 * bytes are not a record. Readers only find and decode records; the rules are check-record.ts's.
 */
import { isUtf8 } from 'node:buffer';

/** A record's text, decoded from UTF-8 (an NDJSON line is trimmed). */
export interface RecordText {
  /** NDJSON: the physical line; JSON array: the item's 1-based position. */
  line: number;
  text: string;
  error?: undefined;
}

/** Bytes that are not a record: too long, not UTF-8, or a broken body structure. */
export interface RecordError {
  line: number;
  error: string;
  /** True when the body's structure is broken and nothing after this can be read. */
  fatal?: boolean;
}

export type RecordItem = RecordText | RecordError;

/** A single transaction is ~150 bytes; anything past this is garbage, not a record. */
export const MAX_RECORD_BYTES = 64 * 1024;

export function oversize(line: number): RecordError {
  return { line, error: `record longer than ${MAX_RECORD_BYTES} bytes` };
}

/** A record's bytes as text. Checked before decoding: toString() would turn bad bytes into U+FFFD and hide them. */
export function decodeRecord(line: number, bytes: Buffer): RecordItem {
  return isUtf8(bytes)
    ? { line, text: bytes.toString('utf8') }
    : { line, error: 'malformed JSON: the record is not valid UTF-8' };
}
