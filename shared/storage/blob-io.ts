/**
 * Single-request blob reads and writes. download() rather than downloadToBuffer(): the
 * latter first asks for the properties, which is a second billed transaction.
 */
import type { BlockBlobClient } from '@azure/storage-blob';

export interface BlobRead {
  body: Buffer;
  etag: string;
}

export function statusOf(error: unknown): number | undefined {
  const s = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

/** The blob's bytes and ETag, or undefined when it does not exist. */
export async function readBlob(blob: BlockBlobClient): Promise<BlobRead | undefined> {
  try {
    const res = await blob.download();
    const parts: Buffer[] = [];
    for await (const part of res.readableStreamBody as AsyncIterable<Buffer>) parts.push(part);
    return { body: Buffer.concat(parts), etag: res.etag ?? '' };
  } catch (e) {
    if (statusOf(e) === 404) return undefined;
    throw e;
  }
}

export type WriteCondition = { ifNoneMatch: '*' } | { ifMatch: string };

export interface WriteOptions {
  contentType: string;
  contentEncoding?: string;
  /** With a condition, a failed condition returns undefined instead of throwing. */
  condition?: WriteCondition;
  metadata?: Record<string, string>;
}

/**
 * Uploads in one request. With a condition, returns the new ETag, or undefined when the
 * condition failed (someone else wrote first): the caller decides what that means.
 */
export async function writeBlob(blob: BlockBlobClient, body: Buffer, options: WriteOptions): Promise<string | undefined> {
  try {
    const res = await blob.upload(body, body.length, {
      blobHTTPHeaders: { blobContentType: options.contentType, ...(options.contentEncoding ? { blobContentEncoding: options.contentEncoding } : {}) },
      ...(options.condition ? { conditions: options.condition } : {}),
      ...(options.metadata ? { metadata: options.metadata } : {}),
    });
    return res.etag ?? '';
  } catch (e) {
    const status = statusOf(e);
    if (options.condition && (status === 412 || status === 409)) return undefined;
    throw e;
  }
}
