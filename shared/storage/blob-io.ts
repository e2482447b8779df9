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

export type WriteCondition = { ifNoneMatch: '*' } | { ifMatch: string } | undefined;

/**
 * Uploads in one request. With a condition, returns the new ETag, or undefined when the
 * condition failed (someone else wrote first): the caller decides what that means.
 */
export async function writeBlob(
  blob: BlockBlobClient,
  body: Buffer,
  contentType: string,
  condition?: WriteCondition,
  contentEncoding?: string,
): Promise<string | undefined> {
  try {
    const res = await blob.upload(body, body.length, {
      blobHTTPHeaders: { blobContentType: contentType, ...(contentEncoding ? { blobContentEncoding: contentEncoding } : {}) },
      ...(condition ? { conditions: condition } : {}),
    });
    return res.etag ?? '';
  } catch (e) {
    const status = statusOf(e);
    if (condition && (status === 412 || status === 409)) return undefined;
    throw e;
  }
}
