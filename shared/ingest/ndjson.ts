/**
 * The NDJSON reader: streams records out of a body without materialising it, one line at a
 * time in memory, capped at MAX_RECORD_BYTES.
 */
import { isUtf8 } from 'node:buffer';

import type { ValidationError } from '../errors';
import { MAX_TRANSACTIONS } from '../model/transaction';
import type { ByteSource } from './body';
import { tooLarge } from './ingest-errors';
import { decodeRecord, MAX_RECORD_BYTES, oversize, type RecordItem } from './record-item';

const NL = 0x0a;

/**
 * Blank (or whitespace-only) NDJSON lines a body may hold: as many as records, so a blank line
 * after every record still fits. A blank line costs ~25 times what a byte of a record costs to
 * read, and is not a record, so nothing else bounds it: unbounded, 250 MB of newlines costs ~7 s of CPU.
 */
const MAX_BLANK_LINES = MAX_TRANSACTIONS;

function tooManyBlankLines(line: number): ValidationError {
  return tooLarge(
    `the body has more than ${MAX_BLANK_LINES} blank lines (at line ${line}): blank lines are limited to as many as a batch has records`,
  );
}

/** One line's bytes (no newline) as a record; undefined for a blank line. */
function lineItem(line: number, bytes: Buffer): RecordItem | undefined {
  if (bytes.length > MAX_RECORD_BYTES) return oversize(line);
  const rec = decodeRecord(line, bytes);
  if (rec.error !== undefined) return rec;
  const text = rec.text.trim();
  return text === '' ? undefined : { line, text };
}

/**
 * Splits NDJSON into records, handed out a slice's worth at a time (one async step per slice, not
 * per record: with AsyncLocalStorage on, every promise pays a hook, and a step per record cost
 * 1.5 s per 1,000,000 records). The complete lines of each slice are checked for UTF-8 and
 * decoded in one go, then split as a string (a per-line Buffer.concat, UTF-8 check and
 * decode cost more than the JSON.parse); a slice with a bad byte is read line by line, so
 * the bad line is named. Only a line cut by a slice boundary is assembled from parts. Blank lines
 * are counted against MAX_BLANK_LINES.
 */
export async function* readNdjson(source: ByteSource): AsyncGenerator<RecordItem[]> {
  let out: RecordItem[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let line = 0;
  let blank = 0;
  const skipBlank = (): void => {
    if (++blank > MAX_BLANK_LINES) throw tooManyBlankLines(line);
  };
  const finishPending = (tail: Buffer): RecordItem | undefined => {
    line++;
    const size = pendingBytes + tail.length;
    const item = size > MAX_RECORD_BYTES ? oversize(line) : lineItem(line, Buffer.concat([...pending, tail], size));
    pending = [];
    pendingBytes = 0;
    if (!item) skipBlank();
    return item;
  };
  for await (const chunk of source) {
    const first = chunk.indexOf(NL);
    if (first === -1) {
      pendingBytes += chunk.length;
      // Past the limit the line is only counted, not kept.
      if (pendingBytes <= MAX_RECORD_BYTES) pending.push(chunk);
      else pending = [];
      continue;
    }
    let start = 0;
    if (pendingBytes > 0) {
      const item = finishPending(chunk.subarray(0, first));
      if (item) out.push(item);
      start = first + 1;
    }
    const last = chunk.lastIndexOf(NL);
    if (start < last + 1) {
      const region = chunk.subarray(start, last);
      if (isUtf8(region)) {
        for (const piece of region.toString('utf8').split('\n')) {
          line++;
          // A character is at most 3 UTF-8 bytes per UTF-16 unit: only long lines need counting.
          if (piece.length * 3 > MAX_RECORD_BYTES && Buffer.byteLength(piece) > MAX_RECORD_BYTES) {
            out.push(oversize(line));
            continue;
          }
          const text = piece.trim();
          if (text !== '') out.push({ line, text });
          else skipBlank();
        }
      } else {
        for (let s = start, nl = chunk.indexOf(NL, s); nl !== -1 && nl <= last; s = nl + 1, nl = chunk.indexOf(NL, s)) {
          const item = lineItem(++line, chunk.subarray(s, nl));
          if (item) out.push(item);
          else skipBlank();
        }
      }
    }
    if (last + 1 < chunk.length) {
      pending.push(chunk.subarray(last + 1));
      pendingBytes = chunk.length - last - 1;
    }
    if (out.length > 0) {
      yield out;
      out = [];
    }
  }
  if (pendingBytes > 0) {
    const item = finishPending(Buffer.alloc(0));
    if (item) yield [item];
  }
}
