/**
 * The broker's journal format. A segment file is an 8-byte magic, then records; a record is
 * `[u32 length][u32 crc32][body]` and its body is a run of operations, each
 * `[u8 kind][u32 n][JSON fields][u32 n][payload bytes]`. One record is one group commit, so a
 * record is all-or-nothing: a torn or corrupt record (short, or a checksum mismatch) ends the
 * valid part of a file.
 */
// CRC-32 (IEEE), zlib's own (Node 20.15+: package.json engines).
import { crc32 } from 'node:zlib';

export const SEGMENT_MAGIC = Buffer.from('PDSBJ01\n', 'latin1');
const HEADER_BYTES = 8;

/** Where a message is. A lock held when the broker stopped is released at start-up, counted. */
export type MessageState = 'active' | 'deferred' | 'locked-active' | 'locked-deferred';

export interface MessageRecord {
  sequenceNumber: number;
  enqueuedAt: number;
  /** Infinity when it never expires. */
  expiresAt: number;
  ttlMs: number;
  deliveryCount: number;
  deadLetterSource?: string;
  /** The AMQP-encoded message as the sender sent it (plus any properties a settlement added). */
  payload: Buffer;
}

export type JournalOp =
  | { kind: 'put'; store: string; state: MessageState; message: MessageRecord }
  | { kind: 'lock'; store: string; seq: number; origin: 'active' | 'deferred' }
  | {
      kind: 'update';
      store: string;
      seq: number;
      deliveryCount: number;
      state: 'active' | 'deferred';
      payload?: Buffer;
    }
  | { kind: 'remove'; store: string; seq: number }
  | { kind: 'schedule'; target: string; seq: number; at: number; payload: Buffer }
  | { kind: 'unschedule'; target: string; seq: number }
  /** The last sequence number a queue, topic or dead-letter queue handed out (written by compaction). */
  | { kind: 'sequence'; owner: string; value: number };

const KINDS = ['put', 'lock', 'update', 'remove', 'schedule', 'unschedule', 'sequence'] as const;
const EMPTY = Buffer.alloc(0);

export function encodeOps(ops: readonly JournalOp[]): Buffer {
  const parts: Buffer[] = [];
  for (const op of ops) {
    let payload: Buffer = EMPTY;
    let fields: unknown = op;
    if (op.kind === 'put') {
      payload = op.message.payload;
      fields = { ...op, message: { ...op.message, payload: undefined } };
    } else if (op.kind === 'schedule' || op.kind === 'update') {
      payload = op.payload ?? EMPTY;
      fields = { ...op, payload: undefined };
    }
    // JSON writes Infinity as null; decodeOps turns it back.
    const json = Buffer.from(JSON.stringify(fields));
    const head = Buffer.alloc(5);
    head.writeUInt8(KINDS.indexOf(op.kind), 0);
    head.writeUInt32BE(json.length, 1);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(payload.length, 0);
    parts.push(head, json, len, payload);
  }
  return Buffer.concat(parts);
}

/** Throws on a body that does not parse (the caller treats that record as corrupt). */
function decodeOps(body: Buffer): JournalOp[] {
  const ops: JournalOp[] = [];
  let at = 0;
  while (at < body.length) {
    const kind = KINDS[body.readUInt8(at)];
    const jsonLength = body.readUInt32BE(at + 1);
    const json = body.subarray(at + 5, at + 5 + jsonLength).toString();
    at += 5 + jsonLength;
    const payloadLength = body.readUInt32BE(at);
    const payload = Buffer.from(body.subarray(at + 4, at + 4 + payloadLength));
    at += 4 + payloadLength;
    if (!kind || at > body.length) throw new Error('malformed operation');
    const op = JSON.parse(json) as JournalOp;
    if (op.kind !== kind) throw new Error('operation kind mismatch');
    if (op.kind === 'put') {
      op.message.payload = payload;
      op.message.expiresAt ??= Infinity;
      op.message.ttlMs ??= Infinity;
    } else if (op.kind === 'schedule') op.payload = payload;
    else if (op.kind === 'update' && payload.length > 0) op.payload = payload;
    ops.push(op);
  }
  return ops;
}

export function frameRecord(body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.writeUInt32BE(crc32(body), 4);
  return Buffer.concat([head, body]);
}

export interface ScanResult {
  ops: JournalOp[];
  records: number;
  /** Bytes from the start of the file that hold whole, valid records. */
  validBytes: number;
  /** Why the rest was not valid, when there is a rest. */
  problem?: string;
}

/** Reads a segment file's records up to the first one that is torn or corrupt. */
export function scanSegment(file: Buffer): ScanResult {
  if (file.length < HEADER_BYTES || !file.subarray(0, HEADER_BYTES).equals(SEGMENT_MAGIC)) {
    return { ops: [], records: 0, validBytes: 0, problem: 'not a journal segment (bad header)' };
  }
  const ops: JournalOp[] = [];
  let at = HEADER_BYTES;
  let records = 0;
  while (at < file.length) {
    if (file.length - at < 8) return { ops, records, validBytes: at, problem: 'torn record header' };
    const length = file.readUInt32BE(at);
    const body = file.subarray(at + 8, at + 8 + length);
    if (body.length < length) return { ops, records, validBytes: at, problem: 'torn record' };
    if (crc32(body) !== file.readUInt32BE(at + 4))
      return { ops, records, validBytes: at, problem: 'checksum mismatch' };
    try {
      ops.push(...decodeOps(body));
    } catch {
      return { ops, records, validBytes: at, problem: 'undecodable record' };
    }
    records++;
    at += 8 + length;
  }
  return { ops, records, validBytes: at };
}
