/**
 * Streams records out of a body without materialising it: NDJSON by line, a JSON array by
 * top-level element (a small byte scanner finds element boundaries; JSON.parse does the rest).
 * Memory holds one record at a time, capped at MAX_RECORD_BYTES.
 */
import { isUtf8 } from 'node:buffer';

import { readJsonArray } from './json-array';
import { type BodyFormat, type ByteSource, type Finish, lineItem, MAX_BLANK_LINES, MAX_RECORD_BYTES, OVERSIZE, parseText, type RecordItem, textOnly, tooManyBlankLines } from './record-text';

export { type BodyFormat, type ByteSource, MAX_RECORD_BYTES } from './record-text';

const NL = 0x0a;

/**
 * Splits NDJSON into records. The complete lines of each slice are checked for UTF-8 and
 * decoded in one go, then split as a string (a per-line Buffer.concat, UTF-8 check and
 * decode cost more than the JSON.parse); a slice with a bad byte is read line by line, so
 * the bad line is named. Only a line cut by a slice boundary is assembled from parts. Blank lines
 * are counted against MAX_BLANK_LINES.
 */
export async function* readNdjson(source: ByteSource, finish: Finish = parseText): AsyncGenerator<RecordItem> {
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
    const item = size > MAX_RECORD_BYTES ? { line, error: OVERSIZE } : lineItem(line, Buffer.concat([...pending, tail], size), finish);
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
      if (item) yield item;
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
            yield { line, error: OVERSIZE };
            continue;
          }
          const text = piece.trim();
          if (text !== '') yield finish(line, text);
          else skipBlank();
        }
      } else {
        for (let s = start, nl = chunk.indexOf(NL, s); nl !== -1 && nl <= last; s = nl + 1, nl = chunk.indexOf(NL, s)) {
          const item = lineItem(++line, chunk.subarray(s, nl), finish);
          if (item) yield item;
          else skipBlank();
        }
      }
    }
    if (last + 1 < chunk.length) {
      pending.push(chunk.subarray(last + 1));
      pendingBytes = chunk.length - last - 1;
    }
  }
  if (pendingBytes > 0) {
    const item = finishPending(Buffer.alloc(0));
    if (item) yield item;
  }
}

/** Records with their parsed values; `textOnly` leaves the parsing to the caller (parseRecord). */
export function readRecords(source: ByteSource, format: BodyFormat, options: { textOnly?: boolean } = {}): AsyncGenerator<RecordItem> {
  const finish = options.textOnly ? textOnly : parseText;
  return format === 'ndjson' ? readNdjson(source, finish) : readJsonArray(source, finish);
}
