/**
 * Streams records out of a body without materialising it: NDJSON by line, a JSON array by
 * top-level element (a small byte scanner finds element boundaries; JSON.parse does the rest).
 * Memory holds one record at a time, capped at MAX_RECORD_BYTES.
 */
import { isUtf8 } from 'node:buffer';

export type BodyFormat = 'ndjson' | 'json';

/** Bytes in order; sync iterables are accepted too (an in-memory body). */
export type ByteSource = AsyncIterable<Buffer> | Iterable<Buffer>;

export interface RecordItem {
  /** NDJSON: the physical line; JSON array: the item's 1-based position. */
  line: number;
  value?: unknown;
  /** Set when this record could not be parsed. */
  error?: string;
  /** True when the body's structure is broken and nothing after this can be read. */
  fatal?: boolean;
}

/** A single transaction is ~150 bytes; anything past this is garbage, not a record. */
export const MAX_RECORD_BYTES = 64 * 1024;

const NL = 0x0a;

// Checked before decoding: toString() would turn bad bytes into U+FFFD and hide them.
const NOT_UTF8 = 'malformed JSON: the record is not valid UTF-8';

function parseText(line: number, text: string): RecordItem {
  try {
    return { line, value: JSON.parse(text) as unknown };
  } catch (e) {
    return { line, error: `malformed JSON: ${(e as Error).message}` };
  }
}

function parse(line: number, bytes: Buffer): RecordItem {
  return isUtf8(bytes) ? parseText(line, bytes.toString('utf8')) : { line, error: NOT_UTF8 };
}

export async function* readNdjson(source: ByteSource): AsyncGenerator<RecordItem> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let line = 0;
  let oversize = false;
  const finish = (): RecordItem | undefined => {
    line++;
    const buf = Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    if (oversize) {
      oversize = false;
      return { line, error: `record longer than ${MAX_RECORD_BYTES} bytes` };
    }
    if (!isUtf8(buf)) return { line, error: NOT_UTF8 };
    const text = buf.toString('utf8').trim();
    return text === '' ? undefined : parseText(line, text);
  };
  for await (const chunk of source) {
    let start = 0;
    for (let nl = chunk.indexOf(NL, start); nl !== -1; nl = chunk.indexOf(NL, start)) {
      if (!oversize) pending.push(chunk.subarray(start, nl));
      pendingBytes += nl - start;
      start = nl + 1;
      const item = finish();
      if (item) yield item;
    }
    if (start < chunk.length) {
      pendingBytes += chunk.length - start;
      if (pendingBytes > MAX_RECORD_BYTES) oversize = true;
      if (!oversize) pending.push(chunk.subarray(start));
    }
    if (oversize) pending = [];
  }
  if (pendingBytes > 0) {
    const item = finish();
    if (item) yield item;
  }
}

const enum S {
  BeforeArray,
  BeforeItem,
  InItem,
  Open,
  AfterArray,
}

/** Splits a top-level JSON array into its elements. Structural errors are fatal. */
export async function* readJsonArray(source: ByteSource): AsyncGenerator<RecordItem> {
  let state = S.BeforeArray as S;
  let item = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let parts: Buffer[] = [];
  let size = 0;
  let first = true;
  const fatal = (message: string): RecordItem => ({ line: Math.max(item, 1), error: `malformed JSON: ${message}`, fatal: true });
  for await (const chunk of source) {
    let itemStart = state === S.InItem ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i] as number;
      if (state === S.InItem) {
        if (inString) {
          if (escaped) escaped = false;
          else if (c === 0x5c) escaped = true;
          else if (c === 0x22) inString = false;
          continue;
        }
        if (c === 0x22) inString = true;
        else if (c === 0x7b || c === 0x5b) depth++;
        else if (c === 0x7d || c === 0x5d) {
          if (depth > 0) {
            depth--;
            continue;
          }
        }
        if (depth === 0 && (c === 0x2c || c === 0x5d)) {
          parts.push(chunk.subarray(itemStart, i));
          size += i - itemStart;
          yield size > MAX_RECORD_BYTES ? { line: item, error: `record longer than ${MAX_RECORD_BYTES} bytes` } : parse(item, Buffer.concat(parts));
          parts = [];
          size = 0;
          state = c === 0x2c ? S.BeforeItem : S.AfterArray;
        }
        continue;
      }
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
      if (first && state === S.BeforeArray && c === 0xef) {
        i += 2; // UTF-8 byte order mark
        continue;
      }
      first = false;
      if (state === S.BeforeArray) {
        if (c !== 0x5b) {
          yield fatal('a JSON body must be an array of transactions');
          return;
        }
        state = S.Open; // after "[": either "]" or the first item
        item = 0;
        continue;
      }
      if (state === S.Open && c === 0x5d && item === 0) {
        state = S.AfterArray;
        continue;
      }
      if (state === S.BeforeItem || state === S.Open) {
        if (c === 0x2c || c === 0x5d) {
          yield fatal(`unexpected "${String.fromCharCode(c)}" where an item was expected`);
          return;
        }
        state = S.InItem;
        item++;
        itemStart = i;
        // An object or array item opens at depth 1; its matching close brings depth back to 0.
        depth = c === 0x7b || c === 0x5b ? 1 : 0;
        inString = c === 0x22;
        escaped = false;
        continue;
      }
      if (state === S.AfterArray) {
          yield fatal('unexpected content after the closing "]"');
          return;
        }
    }
    if (state === S.InItem) {
      const start = Math.max(itemStart, 0);
      size += chunk.length - start;
      if (size <= MAX_RECORD_BYTES) parts.push(chunk.subarray(start));
      else parts = [];
    }
  }
  if (state === S.BeforeArray) yield fatal('the body is empty');
  else if (state !== S.AfterArray) yield fatal('the array is not closed with "]"');
}

export function readRecords(source: ByteSource, format: BodyFormat): AsyncGenerator<RecordItem> {
  return format === 'ndjson' ? readNdjson(source) : readJsonArray(source);
}
