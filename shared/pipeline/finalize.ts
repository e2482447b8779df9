/**
 * Completes a batch once every chunk is done or failed: merge the chunk partials into the
 * report, write `reports/{batchId}.json`, then mark the manifest. Safe to run twice
 * (concurrent aggregators, or ingest and an aggregator): the report is the same bytes and
 * the manifest keeps its first completion.
 */
import { isSettled, isTerminal, type Manifest, type ManifestStore } from '../batch/manifest';
import type { OpenBatches } from '../batch/open-batches';
import { ReportBuilder } from '../billing/report';
import { readResultHeader } from '../billing/result-blob';
import { TransientError } from '../errors';
import { layout } from '../layout';
import type { BlobStore, Logger } from '../ports';
import { mapLimit } from '../util/pool';

const READ_CONCURRENCY = 8;

/**
 * Finalizes each batch at most once at a time in this process: the last coalesced progress
 * write resolves up to 32 callers with the same settled manifest, and one report is enough.
 */
export class Finalizer {
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(
    private readonly blobs: BlobStore,
    private readonly manifests: ManifestStore,
    private readonly open: OpenBatches,
    private readonly now: () => number,
    private readonly log: Logger,
  ) {}

  /** Finalizes `m` if it is accepted and settled; anything else is left as it is. */
  async ifSettled(m: Manifest | undefined): Promise<void> {
    if (!m || m.state !== 'accepted' || !isSettled(m)) return;
    let p = this.inflight.get(m.batchId);
    if (!p) {
      p = this.finalize(m).finally(() => this.inflight.delete(m.batchId));
      this.inflight.set(m.batchId, p);
    }
    await p;
  }

  private async finalize(m: Manifest): Promise<void> {
    const failed = m.failed.length > 0;
    if (!failed) await this.writeReport(m);
    const now = this.now();
    const updated = await this.manifests.update(m.batchId, (cur) => {
      if (isTerminal(cur) || cur.state !== 'accepted') return undefined;
      cur.state = failed ? 'failed' : 'completed';
      cur.completedAt = new Date(now).toISOString();
      cur.latencyMs = now - Date.parse(cur.submittedAt);
      if (failed) cur.error = `${cur.failed.length} of ${cur.chunks} chunks failed: ${cur.failed.slice(0, 5).map((f) => `chunk ${f.chunk}: ${f.reason}`).join('; ')}`;
      return cur;
    });
    if (updated && isTerminal(updated.manifest)) await this.open.remove(m.batchId);
    if (updated?.manifest.state === 'completed' && updated.manifest.completedAt === new Date(now).toISOString()) {
      this.log.info(`batch ${m.batchId} completed: ${m.transactions} transactions in ${m.chunks} chunks, ${updated.manifest.latencyMs ?? 0} ms after submission`);
    }
  }

  private async writeReport(m: Manifest): Promise<void> {
    const builder = new ReportBuilder();
    const headers = await mapLimit(m.done, READ_CONCURRENCY, async (chunk) => {
      const got = await this.blobs.read(layout.result(m.batchId, chunk));
      // Written before its pointer was sent, so absence is a storage hiccup, not a state.
      if (!got) throw new TransientError(`result blob for chunk ${chunk} of ${m.batchId} is missing`);
      return readResultHeader(got.body);
    });
    for (const h of headers) builder.add(h.partials);
    const report = builder.build(m.batchId);
    if (report.transactions !== m.transactions) {
      throw new TransientError(`report for ${m.batchId} counts ${report.transactions} transactions, manifest ${m.transactions}`);
    }
    await this.blobs.write(layout.report(m.batchId), Buffer.from(JSON.stringify(report), 'utf8'), { contentType: 'application/json' });
  }
}
