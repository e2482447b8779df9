/**
 * Reads and conditionally writes manifests. `update` is the only way to change one: it
 * re-reads and re-applies the change when another writer got there first (ETag 412).
 */
import { TransientError } from '../errors';
import { layout } from '../layout';
import type { BlobStore } from '../ports';
import type { Manifest } from './manifest';

export interface VersionedManifest {
  manifest: Manifest;
  etag: string;
}

/** Return the changed manifest, or undefined to leave it as it is. */
export type ManifestChange = (current: Manifest) => Manifest | undefined;

/** Enough for many concurrent aggregators; past it the caller retries the message later. */
const MAX_CONFLICTS = 25;

export class ManifestStore {
  constructor(private readonly blobs: BlobStore) {}

  async read(batchId: string): Promise<VersionedManifest | undefined> {
    const got = await this.blobs.read(layout.manifest(batchId));
    if (!got) return undefined;
    return { manifest: JSON.parse(got.body.toString('utf8')) as Manifest, etag: got.etag };
  }

  /** Creates the manifest only if none exists; undefined means one already does. */
  async create(m: Manifest): Promise<string | undefined> {
    return this.blobs.write(layout.manifest(m.batchId), encode(m), { contentType: 'application/json', condition: { ifNoneMatch: '*' } });
  }

  /** Replaces the manifest if it is still at `etag`; undefined means it changed meanwhile. */
  async replace(m: Manifest, etag: string): Promise<string | undefined> {
    return this.blobs.write(layout.manifest(m.batchId), encode(m), { contentType: 'application/json', condition: { ifMatch: etag } });
  }

  /** Applies `change` atomically. Undefined when the manifest does not exist. */
  async update(batchId: string, change: ManifestChange, jitter: () => number = Math.random): Promise<VersionedManifest | undefined> {
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      const current = await this.read(batchId);
      if (!current) return undefined;
      const next = change(structuredClone(current.manifest));
      if (!next) return current;
      const etag = await this.replace(next, current.etag);
      if (etag !== undefined) return { manifest: next, etag };
      // Lost the race to another writer: back off a little so we don't collide again.
      await new Promise((r) => setTimeout(r, Math.floor(jitter() * 20 * (attempt + 1))));
    }
    throw new TransientError(`manifest ${batchId} is contended: ${MAX_CONFLICTS} conflicting writes in a row`);
  }
}

function encode(m: Manifest): Buffer {
  return Buffer.from(JSON.stringify(m), 'utf8');
}
