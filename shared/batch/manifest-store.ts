/**
 * Reads and conditionally writes manifests. Every change is a read-modify-write under an ETag
 * condition, so concurrent writers (ingest, aggregators) never lose each other's updates, and
 * every write is checked against the table of allowed state changes (batch-state.ts) first.
 */
import { addUsage } from '../cost/batch-usage';
import type { UsageCarrier } from '../cost/usage-ledger';
import { TransientError } from '../errors';
import { layout } from '../layout';
import { type BlobStore, type Clock, systemClock } from '../ports';
import { conflictDelay } from '../retry/backoff';
import { checkStateChange } from './batch-state';
import { KnownVersions } from './known-versions';
import type { Manifest } from './manifest';
import { manifestSummary } from './manifest-summary';

export interface VersionedManifest {
  manifest: Manifest;
  etag: string;
}

/** Return the changed manifest, or undefined to leave it as it is (it may do I/O first). */
export type ManifestChange = (current: Manifest) => Manifest | undefined | Promise<Manifest | undefined>;

/** Enough for many concurrent aggregators; past it the caller retries the message later. */
const MAX_CONFLICTS = 25;
/**
 * `update` changes a manifest: it re-reads and re-applies the change when another writer got
 * there first (ETag 412). `create` and `replace` are the claim's two writes (ingest).
 */
export class ManifestStore {
  private readonly known = new KnownVersions();

  constructor(
    private readonly blobs: BlobStore,
    private readonly clock: Pick<Clock, 'sleep' | 'random'> = systemClock,
    /** Each write carries the batch's usage metered since the last one (usage-ledger.ts). */
    private readonly usage?: UsageCarrier,
  ) {}

  /** The state of the version this process last read or wrote, without a request; undefined when it has none. */
  knownState(batchId: string): Manifest['state'] | undefined {
    const known = this.known.get(batchId);
    return known && (JSON.parse(known.text) as Manifest).state;
  }

  async read(batchId: string): Promise<VersionedManifest | undefined> {
    const got = await this.blobs.read(layout.manifest(batchId));
    if (!got) {
      this.known.forget(batchId);
      return undefined;
    }
    const text = got.body.toString('utf8');
    this.known.set(batchId, text, got.etag);
    return { manifest: JSON.parse(text) as Manifest, etag: got.etag };
  }

  /** Creates the manifest only if none exists; undefined means one already does. */
  async create(m: Manifest): Promise<string | undefined> {
    return this.write(m, { ifNoneMatch: '*' });
  }

  /**
   * Replaces the manifest if it is still the version `over` (its ETag); undefined means it
   * changed meanwhile. Throws, writing nothing, when over → m is not an allowed state change.
   */
  async replace(m: Manifest, over: VersionedManifest): Promise<string | undefined> {
    checkStateChange(m.batchId, over.manifest.state, m.state);
    return this.write(m, { ifMatch: over.etag });
  }

  /**
   * Applies `change` atomically. Undefined when the manifest does not exist. The first attempt
   * starts from the version this process last saw, when it has one (KnownVersions).
   */
  async update(batchId: string, change: ManifestChange): Promise<VersionedManifest | undefined> {
    const known = this.known.get(batchId);
    // Only a write proves the known version current: a change that leaves it as it is (a
    // decision taken on what may be an old version) is decided again on a fresh read.
    const base = known && { manifest: JSON.parse(known.text) as Manifest, etag: known.etag };
    const next = base && (await change(structuredClone(base.manifest)));
    if (base && next) {
      // Refused (or any failure, an illegal change included): the reading path below decides afresh.
      const etag = await this.replace(next, base).catch(() => undefined);
      if (etag !== undefined) return { manifest: next, etag };
    }
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      const current = await this.read(batchId);
      if (!current) return undefined;
      const next = await change(structuredClone(current.manifest));
      if (!next) return current;
      const etag = await this.replace(next, current);
      if (etag !== undefined) return { manifest: next, etag };
      // Lost the race to another writer: back off a little so we don't collide again.
      await this.clock.sleep(conflictDelay(attempt, 20, () => this.clock.random()));
    }
    throw new TransientError(`manifest ${batchId} is contended: ${MAX_CONFLICTS} conflicting writes in a row`);
  }

  private async write(m: Manifest, condition: { ifNoneMatch: '*' } | { ifMatch: string }): Promise<string | undefined> {
    const usage = this.usage;
    const carried = usage?.take(m.batchId);
    if (!usage || !carried) return this.put(m, condition);
    const before = m.usage;
    m.usage = addUsage(before, carried);
    let etag: string | undefined;
    try {
      etag = await usage.carry(() => this.put(m, condition));
    } finally {
      // Refused or failed: the usage is pending again, for the next write of the batch.
      if (etag === undefined) {
        m.usage = before;
        usage.giveBack(m.batchId, carried);
      }
    }
    return etag;
  }

  private async put(m: Manifest, condition: { ifNoneMatch: '*' } | { ifMatch: string }): Promise<string | undefined> {
    const text = JSON.stringify(m);
    const etag = await this.blobs.write(layout.manifest(m.batchId), Buffer.from(text, 'utf8'), {
      contentType: 'application/json',
      condition,
      metadata: manifestSummary(m),
    });
    if (etag) this.known.set(m.batchId, text, etag);
    else this.known.forget(m.batchId);
    return etag;
  }
}
