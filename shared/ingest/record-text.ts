/** What the record readers (records.ts, json-array.ts) share: the record, its limits, parsing. */
import { isUtf8 } from 'node:buffer';

import { ValidationError } from '../errors';
import { MAX_TRANSACTIONS } from '../model/transaction';

export type BodyFormat = 'ndjson' | 'json';

/** Bytes in order; sync iterables are accepted too (an in-memory body). */
export type ByteSource = AsyncIterable<Buffer> | Iterable<Buffer>;

export interface RecordItem {
  /** NDJSON: the physical line; JSON array: the item's 1-based position. */
  line: number;
  /** The parsed record (not set when the reader was asked for text only). */
  value?: unknown;
  /** The record's text (trimmed). */
  text?: string;
  /** Set when this record could not be parsed. */
  error?: string;
  /** True when the body's structure is broken and nothing after this can be read. */
  fatal?: boolean;
}

/** A single transaction is ~150 bytes; anything past this is garbage, not a record. */
export const MAX_RECORD_BYTES = 64 * 1024;

/**
 * Blank (or whitespace-only) NDJSON lines a body may hold: as many as records, so a blank line
 * after every record still fits. A blank line costs ~25 times what a byte of a record costs to
 * read, and is not a record, so nothing else bounds it: 250 MB of newlines took 7 s of CPU.
 */
export const MAX_BLANK_LINES = MAX_TRANSACTIONS;

/** 413, like the inflated-size cap: a limit on how much the server reads, not a record's fault. */
export function tooManyBlankLines(line: number): ValidationError {
  return new ValidationError(
    `the body has more than ${MAX_BLANK_LINES} blank lines (at line ${line}): blank lines are limited to as many as a batch has records`,
    413,
    'too_large',
  );
}

// Checked before decoding: toString() would turn bad bytes into U+FFFD and hide them.
export const NOT_UTF8 = 'malformed JSON: the record is not valid UTF-8';
export const OVERSIZE = `record longer than ${MAX_RECORD_BYTES} bytes`;

export function parseText(line: number, text: string): RecordItem {
  try {
    return { line, value: JSON.parse(text) as unknown, text };
  } catch (e) {
    return { line, error: `malformed JSON: ${(e as Error).message}` };
  }
}

/** What a reader does with a record's text: parse it, or hand it on as text (see parseRecord). */
export type Finish = (line: number, text: string) => RecordItem;
export const textOnly: Finish = (line, text) => ({ line, text });

/** Parses a record that a reader handed on as text. */
export function parseRecord(rec: RecordItem): RecordItem {
  return rec.value === undefined && rec.error === undefined && rec.text !== undefined ? parseText(rec.line, rec.text) : rec;
}

export function parse(line: number, bytes: Buffer, finish: Finish): RecordItem {
  return isUtf8(bytes) ? finish(line, bytes.toString('utf8')) : { line, error: NOT_UTF8 };
}

/** One NDJSON line's bytes (no newline) as a record; undefined for a blank line. */
export function lineItem(line: number, bytes: Buffer, finish: Finish): RecordItem | undefined {
  if (bytes.length > MAX_RECORD_BYTES) return { line, error: OVERSIZE };
  if (!isUtf8(bytes)) return { line, error: NOT_UTF8 };
  const text = bytes.toString('utf8').trim();
  return text === '' ? undefined : finish(line, text);
}
