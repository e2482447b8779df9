/**
 * One record, as the record readers (records.ts, json-array.ts) hand it out: its limits, its
 * parsing, and checkRecord, the per-record rules of ingest.
 */
import { isUtf8 } from 'node:buffer';

import { type ErrorDetail, ValidationError } from '../errors';
import { canonicalLine, isValidTransaction, MAX_TRANSACTIONS, parseCanonical, validateTransaction } from '../model/transaction';

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

/* The per-record rules of ingest: one record's problems, or its canonical line. */
/**
 * More fields than this and a record is not a transaction (it has 7): it gets one problem, not
 * one per unknown or repeated field. Keeps a record's work linear in its size: 256 MB of
 * 64 KiB records of repeated keys took 47 s of CPU with a problem per field.
 */
export const MAX_RECORD_FIELDS = 32;

/**
 * One record (read as text, or parsed): its problems, or its canonical line and id. A record
 * already in the canonical layout is read by position and needs no JSON.parse (see
 * parseCanonical); it cannot repeat a key. Any other record is parsed, and scanned for keys
 * it repeats (JSON.parse keeps the last one silently).
 */
export function checkRecord(rec: RecordItem): { line: string; id: string } | { errors: ErrorDetail[] } {
  if (rec.value === undefined && rec.text !== undefined) {
    const fast = parseCanonical(rec.text);
    if (fast && isValidTransaction(fast)) return { line: rec.text, id: fast.id };
  }
  const parsed = parseRecord(rec);
  if (parsed.error !== undefined) return { errors: [{ line: rec.line, field: '', message: parsed.error }] };
  const isObject = typeof parsed.value === 'object' && parsed.value !== null && !Array.isArray(parsed.value);
  const fields = isObject ? Object.keys(parsed.value as object).length : 0;
  if (fields > MAX_RECORD_FIELDS) return { errors: [{ line: rec.line, field: '', message: `too many fields: ${fields} (a transaction has at most 7)` }] };
  const r = validateTransaction(parsed.value, rec.line);
  const line = 'ok' in r ? canonicalLine(r.ok) : undefined;
  const repeated = isObject && rec.text !== undefined && line !== rec.text ? duplicateKeys(rec.text) : [];
  const errors = repeated.map((field) => ({ line: rec.line, field, message: 'duplicate key: the field appears more than once in the record' }));
  if ('errors' in r) return { errors: [...errors, ...r.errors] };
  if (errors.length > 0 || line === undefined) return { errors };
  return { line, id: r.ok.id };
}

/*
 * JSON.parse keeps the last of two equal keys and says nothing, so `{"amount":1,"amount":2}`
 * would bill 2 for a record the client may have meant as 1. This finds the keys of a record's
 * top-level object that occur more than once, comparing them decoded (`"\u0061mount"` is
 * `amount`). It scans text that JSON.parse has already accepted, so it needs no error paths.
 */
export function duplicateKeys(text: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) {
          escaped = true;
          i++;
        } else if (d === 0x22) break;
      }
      if (depth === 1 && expectKey) {
        expectKey = false;
        const key = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
        if (!seen.has(key)) seen.add(key);
        else if (!out.includes(key)) out.push(key);
      }
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth === 1) expectKey = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c && depth === 1) expectKey = true;
  }
  return out;
}
