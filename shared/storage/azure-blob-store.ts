/**
 * The BlobStore port over Azure Blob Storage. Reads use download() rather than
 * downloadToBuffer(): the latter first asks for the properties, a second billed transaction.
 */
import type { BlobServiceClient, BlockBlobClient, ContainerClient } from '@azure/storage-blob';

import type { BlobRef } from '../layout';
import type { ContainerKey } from '../names';
import type { BlobInfo, BlobRead, BlobStore, ListedBlob, ListOptions, WriteOptions } from '../ports';

export function statusOf(error: unknown): number | undefined {
  const s = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

export class AzureBlobStore implements BlobStore {
  private readonly containers = new Map<ContainerKey, ContainerClient>();

  constructor(
    private readonly service: BlobServiceClient,
    /** The deployment's name for a container key (the prefix lets tests isolate themselves). */
    private readonly containerName: (key: ContainerKey) => string,
  ) {}

  /** The SDK client of a container (for the lease-based drain slots, also an adapter). */
  container(key: ContainerKey): ContainerClient {
    let c = this.containers.get(key);
    if (!c) {
      c = this.service.getContainerClient(this.containerName(key));
      this.containers.set(key, c);
    }
    return c;
  }

  private blob(ref: BlobRef): BlockBlobClient {
    return this.container(ref.container).getBlockBlobClient(ref.name);
  }

  async read(ref: BlobRef): Promise<BlobRead | undefined> {
    try {
      const res = await this.blob(ref).download();
      const parts: Buffer[] = [];
      for await (const part of res.readableStreamBody as AsyncIterable<Buffer>) parts.push(part);
      return { body: Buffer.concat(parts), etag: res.etag ?? '' };
    } catch (e) {
      if (statusOf(e) === 404) return undefined;
      throw e;
    }
  }

  async write(ref: BlobRef, body: Buffer, options: WriteOptions): Promise<string | undefined> {
    try {
      const res = await this.blob(ref).upload(body, body.length, {
        blobHTTPHeaders: {
          blobContentType: options.contentType,
          ...(options.contentEncoding ? { blobContentEncoding: options.contentEncoding } : {}),
        },
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

  exists(ref: BlobRef): Promise<boolean> {
    return this.blob(ref).exists();
  }

  async info(ref: BlobRef): Promise<BlobInfo | undefined> {
    try {
      const props = await this.blob(ref).getProperties();
      return { size: props.contentLength ?? 0, metadata: props.metadata ?? {} };
    } catch (e) {
      if (statusOf(e) === 404) return undefined;
      throw e;
    }
  }

  async remove(ref: BlobRef): Promise<void> {
    await this.blob(ref).deleteIfExists();
  }

  async *list(container: ContainerKey, prefix?: string, options: ListOptions = {}): AsyncIterable<ListedBlob> {
    const query = {
      ...(prefix !== undefined ? { prefix } : {}),
      ...(options.metadata ? { includeMetadata: true } : {}),
    };
    for await (const item of this.container(container).listBlobsFlat(query)) {
      yield {
        name: item.name,
        etag: item.properties.etag ?? '',
        size: item.properties.contentLength ?? 0,
        ...(options.metadata ? { metadata: item.metadata ?? {} } : {}),
      };
    }
  }

  async *stream(ref: BlobRef): AsyncIterable<Buffer> {
    const res = await this.blob(ref).download();
    for await (const part of res.readableStreamBody as AsyncIterable<Buffer>) yield part;
  }

  async copy(from: BlobRef, to: BlobRef): Promise<void> {
    // Copy Blob within one account is authorised by the destination's credential (works with
    // managed identity, unlike Copy From URL).
    const poller = await this.blob(to).beginCopyFromURL(this.blob(from).url, { intervalInMs: 200 });
    await poller.pollUntilDone();
  }
}
