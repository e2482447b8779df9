/**
 * Queue messages are pointers (claim checks): a few hundred bytes naming a blob, never the
 * work itself. A pointer that does not parse can never succeed, so it is a PermanentError.
 */
import { PermanentError } from '../errors';
import { layout } from '../layout';
import { isValidBatchId } from './batch-id';

/** On queue `work-{p}`: one chunk of transactions to bill. */
export interface WorkPointer {
  v: 1;
  batchId: string;
  chunk: number;
  /** Blob name in the work container: `{batchId}/{chunk}.ndjson.gz`. */
  blob: string;
  count: number;
  sha256: string;
  bytes: number;
}

/** On queue `results`: one billed chunk to fold into its batch. */
export interface ResultPointer {
  v: 1;
  batchId: string;
  chunk: number;
  /** Blob name in the results container: `{batchId}/{chunk}`. */
  blob: string;
  count: number;
}

/** The pointer to a billed chunk (count is informational: the fold reads the result's own header). */
export function resultPointer(batchId: string, chunk: number, count: number): ResultPointer {
  return { v: 1, batchId, chunk, blob: layout.result(batchId, chunk).name, count };
}

function parseCommon(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new PermanentError('pointer message is not JSON');
  }
  if (typeof v !== 'object' || v === null) throw new PermanentError('pointer message is not an object');
  const o = v as Record<string, unknown>;
  if (o.v !== 1) throw new PermanentError(`pointer message version ${String(o.v)} is not supported`);
  if (typeof o.batchId !== 'string' || !isValidBatchId(o.batchId)) throw new PermanentError('pointer has an invalid batchId');
  if (typeof o.chunk !== 'number' || !Number.isInteger(o.chunk) || o.chunk < 0) throw new PermanentError('pointer has an invalid chunk');
  if (typeof o.count !== 'number' || !Number.isInteger(o.count) || o.count < 1) throw new PermanentError('pointer has an invalid count');
  return o;
}

export function parseWorkPointer(text: string): WorkPointer {
  const o = parseCommon(text);
  const p = o as unknown as WorkPointer;
  // The blob name is derived, not trusted: a pointer cannot make us read another batch's blob.
  if (p.blob !== layout.chunk(p.batchId, p.chunk).name) throw new PermanentError('pointer blob does not match its batch and chunk');
  if (typeof p.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(p.sha256)) throw new PermanentError('pointer has an invalid sha256');
  return p;
}

export function parseResultPointer(text: string): ResultPointer {
  const o = parseCommon(text);
  const p = o as unknown as ResultPointer;
  if (p.blob !== layout.result(p.batchId, p.chunk).name) throw new PermanentError('pointer blob does not match its batch and chunk');
  return p;
}
