/**
 * The JSON-array reader: streams records out of a body without materialising it. A small byte
 * scanner finds each top-level element's bounds; parsing the element is the record rules' job.
 * Memory holds one record at a time, capped at MAX_RECORD_BYTES.
 */
import type { ByteSource } from './body';
import { decodeRecord, MAX_RECORD_BYTES, oversize, type RecordError, type RecordItem } from './record-item';

const enum S {
  BeforeArray,
  BeforeItem,
  InItem,
  Open,
  AfterArray,
}

/**
 * Splits a top-level JSON array into its elements, handed out a slice's worth at a time (as
 * ndjson.ts does). Structural errors are fatal: the last item handed out.
 */
export async function* readJsonArray(source: ByteSource): AsyncGenerator<RecordItem[]> {
  let out: RecordItem[] = [];
  let state = S.BeforeArray as S;
  let item = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let parts: Buffer[] = [];
  let size = 0;
  let first = true;
  const fatal = (message: string): RecordError => ({
    line: Math.max(item, 1),
    error: `malformed JSON: ${message}`,
    fatal: true,
  });
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
          out.push(size > MAX_RECORD_BYTES ? oversize(item) : decodeRecord(item, Buffer.concat(parts)));
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
          // An object first is most often NDJSON sent with the JSON media type.
          const hint = c === 0x7b ? ' (one transaction per line is NDJSON: send it as application/x-ndjson)' : '';
          out.push(fatal(`a JSON body must be an array of transactions${hint}`));
          yield out;
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
          out.push(fatal(`unexpected "${String.fromCharCode(c)}" where an item was expected`));
          yield out;
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
        out.push(fatal('unexpected content after the closing "]"'));
        yield out;
        return;
      }
    }
    if (state === S.InItem) {
      const start = Math.max(itemStart, 0);
      size += chunk.length - start;
      if (size <= MAX_RECORD_BYTES) parts.push(chunk.subarray(start));
      else parts = [];
    }
    if (out.length > 0) {
      yield out;
      out = [];
    }
  }
  if (state === S.BeforeArray) yield [fatal('the body is empty')];
  else if (state !== S.AfterArray) yield [fatal('the array is not closed with "]"')];
}
